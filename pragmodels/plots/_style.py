"""Shared plot style: prompt markers and colours as in Mühlenbernd (2026), Figure 1."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.figure import Figure

PROMPT_STYLE: dict[str, dict[str, Any]] = {
    "MIN": dict(marker="o", color="0.5"),
    "ALT": dict(marker="s", color="tab:orange"),
    "KMA": dict(marker="^", color="tab:blue"),
    "COM": dict(marker="D", color="tab:green"),
}


def new_figure(n_panels: int, width: float = 4.2, height: float = 4.0, **kw: Any) -> tuple[Figure, np.ndarray]:
    """A figure with one row of ``n_panels`` axes; returns it and the axes ``[n_panels]``.

    Drawn through pyplot with whatever backend is active (the library never selects one), so a
    notebook shows the figure inline; the command line chooses a non-interactive backend."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n_panels, figsize=(width * n_panels, height), squeeze=False, **kw)
    return fig, axes[0]
