"""The package's own exception types, so that callers (and the command line) can catch them.

Layering: the standard library only; any module may import it.

Every exception of the package is a :class:`PragmodelsError` and subclasses the built-in
exception it would otherwise have been, so ``except ValueError`` keeps working. Only
:class:`PragmodelsError` and :class:`ConfigError` (a ``ValueError``: a fit or study config cannot
be used; raised by :mod:`pragmodels.runs.schema` and the runners) are defined here; the others are
defined where they are raised: :mod:`pragmodels.runs.folder` (``RunError``, ``RunFolderLocked``),
:mod:`pragmodels.inference.diagnostics`, :mod:`pragmodels.inference.fitting`,
:mod:`pragmodels.inference.fit_many`, :mod:`pragmodels.lm.base`, :mod:`pragmodels.io.errors`,
:mod:`pragmodels.datasets.fetch` and :mod:`pragmodels.datasets.schema`. The whole hierarchy is
drawn on the architecture page of the docs ("Errors").
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["PragmodelsError", "ConfigError", "one_line_cli"]


class PragmodelsError(Exception):
    """Base class of the exceptions pragmodels raises on purpose."""


class ConfigError(PragmodelsError, ValueError):
    """A config file (or a config mapping) that cannot be used: invalid JSON, not an object, an
    unknown key, a value of the wrong type or outside its range.

    The message is one line and names the file, the key and the value. ``path`` is the config
    file (or None for a mapping); ``problems`` lists ``(key, message)``, one per problem found,
    with ``key`` dotted (``"sampler.target_accept"``; ``""`` for the whole config).
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None,
                 problems: Sequence[tuple[str, str]] = ()):
        super().__init__(message)
        self.path = None if path is None else Path(path)
        self.problems = list(problems)


def one_line_cli(main: Callable[[], int], prog: str, argv: list[str] | None = None) -> int:
    """Run a script's ``main()`` so that a failure is one line, ``<prog>: error: ...``, exit code 2.

    ``--debug`` anywhere in the arguments (``sys.argv`` unless ``argv`` is given) is removed and
    keeps the traceback. Caught: :class:`PragmodelsError`, ``ValueError`` and ``OSError`` (bad
    input, missing files); anything else is a bug and propagates.

    Parameters
    ----------
    main : callable
        The script's entry point, reading ``sys.argv``; returns an exit code.
    prog : str
        The script's name in the message.
    argv : list of str, optional
        The argument list to edit in place (default ``sys.argv``).

    Returns
    -------
    int
        ``main()``'s exit code, or 2 after a one-line error.
    """
    import sys

    args = sys.argv if argv is None else argv
    if "--debug" in args:
        args.remove("--debug")
        return main()
    try:
        return main()
    except (PragmodelsError, ValueError, OSError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
