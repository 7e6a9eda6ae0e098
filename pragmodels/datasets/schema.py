"""Schema checks for tidy frames; every error names the file, the column and the value.

Layering: ``pandas``, ``numpy`` and :mod:`pragmodels.errors` only.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from typing import Any, NoReturn

import numpy as np
import pandas as pd

from pragmodels.errors import PragmodelsError

__all__ = ["DataSchemaError", "require_columns", "check_in", "check_range", "check_integer"]

#: the file a frame was read from, as named in the errors
File = str | os.PathLike[str]


class DataSchemaError(PragmodelsError, ValueError):
    """A data file parsed but broke its documented schema."""


def require_columns(df: pd.DataFrame, columns: Iterable[str], file: File) -> None:
    """``df`` must have every one of ``columns`` (extra columns are allowed).

    Parameters
    ----------
    df : pandas.DataFrame
    columns : iterable of str
    file : str or path-like
        The file ``df`` was read from, named in the error.

    Raises
    ------
    DataSchemaError
        Naming the file, the missing columns and the columns found.
    """
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataSchemaError(
            f"{file}: missing column(s) {missing}; found {list(df.columns)}."
        )


def _fail(df: pd.DataFrame, mask: Any, column: str, file: File, expected: str) -> NoReturn:
    row = int(np.flatnonzero(np.asarray(mask))[0])
    value = df[column].iloc[row]
    value = value.item() if hasattr(value, "item") else value
    raise DataSchemaError(
        f"{file}: column {column!r}, row {row}: value {value!r}; expected {expected}."
    )


def check_in(df: pd.DataFrame, column: str, allowed: Collection[Any], file: File) -> None:
    """Every value of ``df[column]`` must be one of ``allowed``.

    Parameters
    ----------
    df : pandas.DataFrame
    column : str
    allowed : collection
        The allowed values (sortable: the message lists them sorted).
    file : str or path-like
        The file ``df`` was read from, named in the error.

    Raises
    ------
    DataSchemaError
        Naming the file, the column, the first offending row and its value.
    """
    mask = ~df[column].isin(list(allowed))
    if mask.any():
        _fail(df, mask, column, file, f"one of {sorted(allowed)}")


def check_integer(df: pd.DataFrame, column: str, file: File, *, nullable: bool = False) -> None:
    """Every value of ``df[column]`` must be a whole number (``3`` or ``3.0``; not ``"x"``, ``3.5`` or ``true``).

    Parameters
    ----------
    df : pandas.DataFrame
    column : str
    file : str or path-like
        The file ``df`` was read from, named in the error.
    nullable : bool
        Allow nulls (NaN, None, ``pd.NA``).

    Raises
    ------
    DataSchemaError
        Naming the file, the column, the first offending row and its value.
    """
    col = pd.to_numeric(df[column], errors="coerce")
    bad = col.isna() & ~(df[column].isna() & nullable)
    bad |= col.notna() & (col != col.round())
    # a JSON true/false is not a rating or an id (pd.to_numeric reads it as 1/0)
    bad |= df[column].map(lambda v: isinstance(v, (bool, np.bool_))).astype(bool)
    if bad.any():
        _fail(df, bad, column, file, "an integer" + (" or null" if nullable else ""))


def check_range(df: pd.DataFrame, column: str, lo: float, hi: float, file: File, *,
                nullable: bool = False) -> None:
    """Every value of ``df[column]`` must be a number in ``[lo, hi]`` (bounds included).

    Parameters
    ----------
    df : pandas.DataFrame
    column : str
    lo, hi : float
        The closed range.
    file : str or path-like
        The file ``df`` was read from, named in the error.
    nullable : bool
        Allow nulls; non-numeric values always fail.

    Raises
    ------
    DataSchemaError
        Naming the file, the column, the first offending row and its value.
    """
    col = pd.to_numeric(df[column], errors="coerce")
    bad = ~((col >= lo) & (col <= hi))
    if nullable:
        bad &= df[column].notna()
    if bad.any():
        _fail(df, bad, column, file, f"a number in [{lo}, {hi}]")
