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
    mask = ~df[column].isin(list(allowed))
    if mask.any():
        _fail(df, mask, column, file, f"one of {sorted(allowed)}")


def check_integer(df: pd.DataFrame, column: str, file: File, *, nullable: bool = False) -> None:
    col = pd.to_numeric(df[column], errors="coerce")
    bad = col.isna() & ~(df[column].isna() & nullable)
    bad |= col.notna() & (col != col.round())
    if bad.any():
        _fail(df, bad, column, file, "an integer" + (" or null" if nullable else ""))


def check_range(df: pd.DataFrame, column: str, lo: float, hi: float, file: File, *,
                nullable: bool = False) -> None:
    col = pd.to_numeric(df[column], errors="coerce")
    bad = ~((col >= lo) & (col <= hi))
    if nullable:
        bad &= df[column].notna()
    if bad.any():
        _fail(df, bad, column, file, f"a number in [{lo}, {hi}]")
