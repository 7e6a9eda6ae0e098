"""Schema checks for tidy frames; every error names the file, the column and the value.

Per column: types and nulls (:func:`check_integer`, :func:`check_range`, :func:`check_in`,
:func:`check_text`); per row: keys that appear once (:func:`check_unique`); per data set: the
count in each cell of a known design (:func:`check_design`) and the whole count
(:func:`check_count`). They catch, in a copy read without its sha256 check, what the hash would
have: a row dropped, repeated or cut short, columns swapped, a null or a malformed value (two
columns of the same type and range swapped, e.g. two 1-7 ratings, only the hash can catch).

Layering: ``pandas``, ``numpy`` and :mod:`pragmodels.errors` only.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np
import pandas as pd

from pragmodels.errors import PragmodelsError

__all__ = ["DataSchemaError", "require_columns", "check_in", "check_range", "check_integer", "check_text",
           "check_unique", "check_design", "check_count"]

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


def _py(value: Any) -> Any:
    """A NumPy scalar as the Python value (so messages show ``3``, not ``np.int64(3)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _fail(df: pd.DataFrame, mask: Any, column: str, file: File, expected: str) -> NoReturn:
    row = int(np.flatnonzero(np.asarray(mask))[0])
    value = _py(df[column].iloc[row])
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


def check_integer(df: pd.DataFrame, column: str, file: File, *, nullable: bool = False, typed: bool = False) -> None:
    """Every value of ``df[column]`` must be a whole number (``3`` or ``3.0``; not ``"x"``, ``3.5`` or ``true``).

    Parameters
    ----------
    df : pandas.DataFrame
    column : str
    file : str or path-like
        The file ``df`` was read from, named in the error.
    nullable : bool
        Allow nulls (NaN, None, ``pd.NA``).
    typed : bool
        A string is not a number (a JSON file, whose numbers are typed; a CSV file's are read
        from text).

    Raises
    ------
    DataSchemaError
        Naming the file, the column, the first offending row and its value.
    """
    col = pd.to_numeric(df[column], errors="coerce")
    if typed:
        col = col.where(~df[column].map(lambda v: isinstance(v, str)).astype(bool))
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


def check_text(df: pd.DataFrame, column: str, file: File, *, nullable: bool = False, empty: bool = False) -> None:
    """Every value of ``df[column]`` must be a string, not blank (unless ``empty``).

    Parameters
    ----------
    df : pandas.DataFrame
    column : str
    file : str or path-like
        The file ``df`` was read from, named in the error.
    nullable : bool
        Allow nulls.
    empty : bool
        Allow an empty or blank string.

    Raises
    ------
    DataSchemaError
        Naming the file, the column, the first offending row and its value.
    """
    values = df[column]
    bad = ~values.map(lambda v: isinstance(v, str) and (empty or bool(v.strip()))).astype(bool)
    if nullable:
        bad &= values.notna()
    if bad.any():
        _fail(df, bad, column, file, ("a string" if empty else "a non-empty text") + (" or null" if nullable else ""))


def check_unique(df: pd.DataFrame, key: Sequence[str], file: File, what: str) -> None:
    """Each combination of the ``key`` columns must appear in one row only.

    Parameters
    ----------
    df : pandas.DataFrame
    key : sequence of str
        The columns that identify a row.
    file : str or path-like
        The file ``df`` was read from, named in the error.
    what : str
        What a row is (``"participant"``, ``"record"``), named in the error.

    Raises
    ------
    DataSchemaError
        Naming the file, the first repeating row and its key.
    """
    dup = df.duplicated(subset=list(key))
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        values = {k: _py(df[k].iloc[row]) for k in key}
        raise DataSchemaError(f"{file}: row {row} repeats the {what} {values}; expected one row per "
                              f"{', '.join(key)}.")


def check_design(df: pd.DataFrame, factors: Sequence[str], file: File, *, per_cell: int | None,
                 unit: tuple[str, str], levels: Mapping[str, Collection[Any]] | None = None,
                 cell: str = "cell") -> None:
    """Each cell of a design (a combination of the ``factors``' values) must hold ``per_cell`` rows.

    Parameters
    ----------
    df : pandas.DataFrame
    factors : sequence of str
        The columns whose values make the cells.
    file : str or path-like
        The file ``df`` was read from, named in the error.
    per_cell : int or None
        The rows each cell holds; ``None``: at least one.
    unit : (str, str)
        What a row is, singular and plural (``("record", "records")``).
    levels : mapping of str to collection, optional
        Each factor's values, when the design crosses them all (every combination is a cell, an
        absent one holds 0 rows); default: the combinations found.
    cell : str
        What a cell is called in the error (``"cell"``, ``"scale"``).

    Raises
    ------
    DataSchemaError
        Naming the file, the first cell with another count, its count and the one expected.
    """
    counts = df.groupby(list(factors), sort=True).size()
    if levels is not None:
        full = pd.MultiIndex.from_product([sorted(levels[f]) for f in factors], names=list(factors))
        counts = counts.reindex(full, fill_value=0)
    bad = counts < 1 if per_cell is None else counts != per_cell
    if bad.any():
        at = counts.index[np.flatnonzero(bad.to_numpy())[0]]
        values = dict(zip(factors, map(_py, at if isinstance(at, tuple) else (at,))))
        n = int(counts[bad].iloc[0])
        expected = "at least 1" if per_cell is None else str(per_cell)
        raise DataSchemaError(f"{file}: the {cell} {values} has {n} {unit[n != 1]}; expected {expected} (every "
                              f"{' x '.join(factors)} {cell} has {expected}).")


def check_count(n: int, expected: int, file: File, unit: str, what: str) -> None:
    """The data set holds ``expected`` rows (or items, participants, ...).

    Parameters
    ----------
    n : int
        The count found.
    expected : int
        The count of the published data set.
    file : str or path-like
        The file, named in the error.
    unit : str
        What is counted, plural (``"participants"``).
    what : str
        The data set, named in the error.

    Raises
    ------
    DataSchemaError
        Naming the file, both counts and the data set.
    """
    if n != expected:
        raise DataSchemaError(f"{file}: {n} {unit}; expected {expected} ({what}): a row dropped, repeated or "
                              "added?")
