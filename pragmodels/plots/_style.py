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


def fit_colours(n: int) -> list:
    """``n`` saturated, distinct colours (cycled past 23): tab10, then the darkest of each tab20b
    hue group, then Dark2. Not tab20: every second entry of it is a pale tint, which reads as the
    fading that marks an unconverged fit."""
    import matplotlib.pyplot as plt

    listed = ([plt.get_cmap("tab10")(i) for i in range(10)] + [plt.get_cmap("tab20b")(i) for i in range(0, 20, 4)]
              + [plt.get_cmap("Dark2")(i) for i in range(8)])
    return [listed[i % len(listed)] for i in range(max(n, 1))]
