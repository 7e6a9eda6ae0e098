"""The exceptions of result files: damaged, tampered with, or not saved."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pragmodels.errors import PragmodelsError

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["ResultFileError", "ResultChecksumError", "ResultSaveError", "ResultFileWarning"]


class ResultFileError(PragmodelsError, ValueError):
    """A result file cannot be read as a pragmodels result: truncated, damaged or not netCDF."""


class ResultChecksumError(ResultFileError):
    """A result file's contents do not match the checksum recorded when it was saved."""


class ResultSaveError(PragmodelsError, OSError):
    """A result could not be saved; the file at :attr:`path` (if any) was left as it was.

    The cause is chained (``__cause__``). :attr:`tree` holds the result that was being saved,
    so that finished samples are not lost with the file (``except ResultSaveError as e: e.tree``).
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None,
                 tree: xr.DataTree | None = None):
        super().__init__(message)
        self.path = None if path is None else Path(path)
        self.tree = tree

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ResultFileWarning(UserWarning):
    """A result file was loaded without checksum verification (it records no checksum)."""
