"""Shared drawing helpers: colours per program, the figure factory (no pyplot state), saving PNG/SVG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# tab20 without its two reds: red is reserved for out-of-bounds accesses.
PALETTE = [
    "#1f77b4",
    "#aec7e8",
    "#ff7f0e",
    "#ffbb78",
    "#2ca02c",
    "#98df8a",
    "#9467bd",
    "#c5b0d5",
    "#8c564b",
    "#c49c94",
    "#e377c2",
    "#f7b6d2",
    "#7f7f7f",
    "#c7c7c7",
    "#bcbd22",
    "#dbdb8d",
    "#17becf",
    "#9edae5",
]
OOB = "#e00000"
MASKED_HATCH = "////"


def program_color(number: int) -> str:
    return PALETTE[number % len(PALETTE)]


def rgb(color: str) -> tuple[float, float, float]:
    color = color.lstrip("#")
    return tuple(int(color[i : i + 2], 16) / 255 for i in (0, 2, 4))  # type: ignore[return-value]


def figure(width: float, height: float) -> Any:
    """A matplotlib Figure on the Agg canvas; no pyplot, so it is safe inside a threaded web server."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def save(fig: Any, path: str | Path) -> Path:
    """Write PNG or SVG, chosen by the file's suffix (PNG when there is none)."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        path = path.with_suffix(".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, format=path.suffix.lower().lstrip("."))
    return path


def legend_handles(items: list[tuple[str, dict]]) -> list[Any]:
    from matplotlib.patches import Patch

    return [Patch(label=label, **style) for label, style in items]


def message_figure(path: str | Path, title: str, message: str) -> Path:
    """A picture that says why there is no picture (no launch, an exception, …)."""
    import textwrap

    fig = figure(8, 2.6)
    ax = fig.add_subplot()
    ax.axis("off")
    ax.set_title(title, loc="left", fontsize=11)
    text = "\n".join(textwrap.fill(line, 100) for line in message.splitlines()[:12])
    ax.text(0, 0.9, text, va="top", ha="left", family="monospace", fontsize=8, transform=ax.transAxes)
    return save(fig, path)
