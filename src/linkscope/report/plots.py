"""Matplotlib plumbing for the report: figures without pyplot (no global backend state), PNG bytes,
a log2 size axis, colours per link kind, and a heatmap helper.

Matplotlib is a dependency of linkscope; should it be missing anyway, ``new_figure`` raises
``BackendUnavailable`` with the install hint.
"""
from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

from ..errors import BackendUnavailable
from ..units import format_size

LINK_COLOURS = {
    "nvlink": "#76b900",  # NVIDIA green
    "xgmi": "#b5179e",
    "pcie": "#1f77b4",
    "upi": "#ff7f0e",
    "network": "#7f7f7f",
}
DEVICE_STYLE = {  # face colour, marker
    "gpu": ("#2ca02c", "s"),
    "cpu": ("#1f77b4", "o"),
    "pcie_switch": ("#9ecae1", "D"),
    "host_bridge": ("#c6dbef", "D"),
    "nvswitch": ("#b8e186", "h"),
    "nic": ("#fdae6b", "^"),
    "network_switch": ("#d9d9d9", "p"),
}
SIMULATED_NOTE = "SIMULATED"
WATERMARK_GID = "simulated-watermark"  # the one text drawn across others on purpose


def new_figure(width_in: float = 7.0, height_in: float = 4.2) -> Any:
    """A Matplotlib Figure with an Agg canvas, independent of pyplot's global state."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise BackendUnavailable(f"the HTML report needs matplotlib ({exc})", hint="pip install matplotlib") from None
    fig = Figure(figsize=(width_in, height_in), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig: Any, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white")
    return buf.getvalue()


def stamp_simulated(fig: Any) -> None:
    """A diagonal SIMULATED watermark, so a screenshot of the figure alone cannot be mistaken."""
    fig.text(0.5, 0.5, SIMULATED_NOTE, fontsize=46, color="#d62728", alpha=0.13, rotation=25,
             ha="center", va="center", weight="bold", zorder=0, gid=WATERMARK_GID)


def log2_size_axis(ax: Any, sizes: Sequence[int]) -> None:
    """OSU-style x axis: log2 scale, ticks at the sizes (thinned to at most ~12), labelled 4 KiB, 1 MiB."""
    ax.set_xscale("log", base=2)
    ticks = sorted(set(int(s) for s in sizes if s > 0))
    if len(ticks) > 12:
        step = math.ceil(len(ticks) / 12)
        ticks = ticks[::step]
    ax.set_xticks(ticks)
    ax.set_xticklabels([format_size(t).replace(" ", "\u202f") for t in ticks], rotation=45, ha="right", fontsize=8)
    ax.minorticks_off()


def heatmap(ax: Any, values: list[list[float | None]], marks: list[list[str]], row_labels: Sequence[str],
            col_labels: Sequence[str], cmap: str, unit: str, fig: Any, fmt: str = "{:.0f}",
            vmin: float | None = None, vmax: float | None = None) -> None:
    """A matrix with annotated cells; None cells are grey and show their mark (``N/A``, ``waived``, ``err``).
    Cell text is black or white by the luminance of the cell's colour, so it stays readable on any
    colour map."""
    import numpy as np

    data = np.array([[np.nan if v is None else float(v) for v in row] for row in values], dtype=float)
    masked = np.ma.masked_invalid(data)
    import matplotlib

    colour_map = matplotlib.colormaps[cmap].with_extremes(bad="#e0e0e0")
    image = ax.imshow(masked, cmap=colour_map, aspect="auto", vmin=vmin, vmax=vmax)
    ax.set_xticks(range(len(col_labels)))
    ax.set_xticklabels(col_labels, fontsize=9)
    ax.set_yticks(range(len(row_labels)))
    ax.set_yticklabels(row_labels, fontsize=9)
    ax.set_xlabel("destination")
    ax.set_ylabel("source")
    small = len(row_labels) <= 16
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            if not small:
                continue
            text = fmt.format(v) if v is not None else marks[i][j]
            colour = "black"
            if v is not None:
                r, g, b, _ = colour_map(image.norm(v))
                colour = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
            ax.text(j, i, text, ha="center", va="center", fontsize=8 if len(row_labels) > 8 else 9, color=colour)
    fig.colorbar(image, ax=ax, label=unit, shrink=0.85)
