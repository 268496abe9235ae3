"""Plots of benchmark results, from stored JSON only (matplotlib, no torch, no GPU, so they run in CPU-only
CI): the roofline against this GPU's measured peaks, a sweep of one launch parameter, the heat map of a
two-parameter grid, grouped bars of speed-ups. `tritonlab bench --plot` and `scripts/bench_report.py` draw
with them; the rows are those of `bench.measure_case`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tritonlab.perf.bench import intensity, roofline


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


IMPL_STYLE = {
    "triton": ("tab:red", "o"),
    "torch": ("tab:blue", "s"),
    "torch.compile": ("tab:green", "^"),
    "cuBLAS": ("tab:purple", "D"),
}


def plot_roofline(
    rows: Sequence[dict[str, Any]], peaks: dict[str, Any], path: str | Path, title: str = "Roofline"
) -> Path:
    """Log-log roofline from the measured peaks, with one point per (case, implementation)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    bw, pk = float(peaks["copy_gbps"]), float(peaks["matmul_bf16_tflops"])
    xs = [10 ** (i / 20) for i in range(-50, 81)]
    ax.plot(
        xs,
        [roofline(pk, bw, x) for x in xs],
        color="black",
        lw=1.5,
        label=f"measured roof: {bw / 1e3:.2f} TB/s, {pk:.0f} TFLOP/s",
    )
    seen: set[str] = set()
    for row in rows:
        if not row.get("flops"):
            continue
        ai = intensity(row["flops"], row["bytes"])
        for name, t in row["impls"].items():
            if "tflops" not in t:
                continue
            color, marker = IMPL_STYLE.get(name, ("gray", "x"))
            ax.scatter(
                [ai],
                [t["tflops"]],
                color=color,
                marker=marker,
                s=28,
                zorder=3,
                label=None if name in seen else name,
            )
            seen.add(name)
            if name == "triton":
                ax.annotate(
                    f"{row['kernel']} {row['dtype']}",
                    (ai, t["tflops"]),
                    fontsize=6,
                    xytext=(3, -8),
                    textcoords="offset points",
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte of DRAM traffic, counted)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, path)


def plot_sweep(
    series: dict[str, Sequence[tuple[float, float]]],
    path: str | Path,
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logx: bool = True,
    hline: tuple[float, str] | None = None,
) -> Path:
    """Line plot of named series of (x, y) points, e.g. GB/s against problem size."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for name, pts in series.items():
        pts = sorted(pts)
        color, marker = IMPL_STYLE.get(name, (None, "o"))
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color, label=name, ms=4)
    if hline:
        ax.axhline(hline[0], color="black", ls="--", lw=1, label=hline[1])
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def plot_heatmap(grid: dict[str, Any], path: str | Path, *, title: str, unit: str = "GB/s") -> Path:
    """Heat map of ``grid = {"x": [...], "y": [...], "values": [[...]], "xlabel", "ylabel"}`` (None = failed)."""
    plt = _plt()
    xs, ys, vals = grid["x"], grid["y"], grid["values"]
    fig, ax = plt.subplots(figsize=(1.1 * len(xs) + 2.5, 0.6 * len(ys) + 2))
    data = [[math.nan if v is None else v for v in row] for row in vals]
    im = ax.imshow(data, cmap="viridis", aspect="auto", origin="lower")
    ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    ax.set_yticks(range(len(ys)), [str(y) for y in ys])
    ax.set_xlabel(grid.get("xlabel", "x"))
    ax.set_ylabel(grid.get("ylabel", "y"))
    finite = [v for row in data for v in row if math.isfinite(v)]
    top = max(finite) if finite else 0
    for i, row in enumerate(data):
        for j, v in enumerate(row):
            txt = "—" if not math.isfinite(v) else f"{v:.0f}"
            ax.text(
                j,
                i,
                txt,
                ha="center",
                va="center",
                fontsize=7,
                color="black" if math.isfinite(v) and v > 0.6 * top else "white",
            )
    fig.colorbar(im, ax=ax, label=unit)
    ax.set_title(title)
    return _save(fig, path)


def plot_bars(groups: dict[str, dict[str, float]], path: str | Path, *, ylabel: str, title: str) -> Path:
    """Grouped bars: ``{group: {impl: value}}`` (e.g. TFLOP/s per shape and implementation)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(6, 2.2 * len(groups)), 4.5))
    impls = sorted(
        {i for g in groups.values() for i in g},
        key=lambda s: list(IMPL_STYLE).index(s) if s in IMPL_STYLE else 99,
    )
    width = 0.8 / max(1, len(impls))
    # Implementations without a fixed style each get their own colour (never one shared gray).
    spare = iter(("tab:gray", "tab:olive", "tab:brown", "tab:cyan", "tab:pink", "black"))
    colours = {impl: IMPL_STYLE[impl][0] if impl in IMPL_STYLE else next(spare, None) for impl in impls}
    for k, impl in enumerate(impls):
        xs = [i + k * width for i in range(len(groups))]
        ys = [g.get(impl, 0.0) for g in groups.values()]
        ax.bar(xs, ys, width, label=impl, color=colours[impl])
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))], list(groups), fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def _save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
