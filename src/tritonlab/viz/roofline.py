"""PARENT side: the roofline with a learner's kernel placed on it — from plain numbers.

`roofline(out, peak_gbps=…, peak_tflops=…, flops=…, nbytes=…, seconds=…)` needs no bench module: pass the
machine's ceilings (GB/s, TFLOP/s) and the kernel's counted FLOPs, bytes and measured time. `from_bench`
reads the JSON that `tritonlab bench --json` prints (rows with flops/bytes/impls[...].ms and measured peaks).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tritonlab.viz.style import figure, save


@dataclass(frozen=True)
class Point:
    label: str
    flops: float
    nbytes: float
    seconds: float
    mine: bool = False  # drawn red and labelled: the learner's kernel
    group: str = ""  # the legend entry (given, it names `mine` points too); default: the label's first word

    @property
    def intensity(self) -> float:
        """FLOP per byte of memory traffic."""
        return self.flops / self.nbytes if self.nbytes else float("inf")

    @property
    def tflops(self) -> float:
        return self.flops / self.seconds / 1e12 if self.seconds else 0.0

    @property
    def gbps(self) -> float:
        return self.nbytes / self.seconds / 1e9 if self.seconds else 0.0


def attainable(peak_gbps: float, peak_tflops: float, intensity: float | np.ndarray) -> Any:
    """min(peak compute, bandwidth × intensity), in TFLOP/s."""
    return np.minimum(peak_tflops, peak_gbps * np.asarray(intensity) / 1e3)


def ax_labels(ax: Any) -> set[str]:
    return {h.get_label() for h in ax.collections}


def roofline(
    out: str | Path,
    *,
    peak_gbps: float,
    peak_tflops: float,
    flops: float = 0.0,
    nbytes: float = 0.0,
    seconds: float = 0.0,
    label: str = "your kernel",
    others: list[Point] | None = None,
    title: str = "Roofline",
    roof_label: str | None = None,
    show_lines: bool = True,
) -> Path:
    """`show_lines=False` leaves out the box of "% of the roof" lines (a caller that prints them itself)."""
    points = ([Point(label, flops, nbytes, seconds, True)] if seconds > 0 and nbytes > 0 else []) + list(
        others or []
    )
    ridge = peak_tflops * 1e3 / peak_gbps  # FLOP/byte where the two roofs meet
    intensities = [p.intensity for p in points if p.flops > 0] + [ridge]
    lo = min(min(intensities) / 8, 0.05)
    hi = max(max(intensities) * 8, ridge * 8)
    xs = np.logspace(np.log10(lo), np.log10(hi), 200)
    fig = figure(8, 5.4)
    ax = fig.add_subplot()
    ax.plot(
        xs,
        attainable(peak_gbps, peak_tflops, xs),
        color="black",
        lw=1.8,
        label=roof_label or f"roof: {peak_gbps:.0f} GB/s, {peak_tflops:.1f} TFLOP/s",
    )
    ax.axvline(ridge, color="0.6", ls=":", lw=1)
    ax.text(ridge * 1.1, peak_tflops / 2.5, f"ridge: {ridge:.0f} FLOP/B", fontsize=8, color="0.4")
    lines, colors = [], {}
    for p in points:
        roof = float(attainable(peak_gbps, peak_tflops, p.intensity)) if p.flops > 0 else 0.0
        if p.mine:
            lines.append(
                f"{p.label}: {p.tflops:.3g} TFLOP/s = {100 * p.tflops / roof:.0f}% of the roof"
                if roof
                else f"{p.label}: {p.gbps:.0f} GB/s = {100 * p.gbps / peak_gbps:.0f}% of the memory roof"
            )
        if p.flops <= 0:  # a pure data-movement kernel has no place on the FLOP axis (its line says its GB/s)
            continue
        group = p.group or p.label.split(" ")[0]
        color = "tab:red" if p.mine else colors.setdefault(group, f"C{len(colors) % 10}")
        ax.scatter(
            [p.intensity],
            [p.tflops],
            s=46 if p.mine else 16,
            color=color,
            zorder=3,
            edgecolors="black" if p.mine else "none",
            label=None if (p.mine and not p.group) or group in ax_labels(ax) else group,
        )
        if p.mine:
            ax.vlines(p.intensity, p.tflops, roof, color=color, ls="--", lw=0.8)
    if lines and show_lines:
        shown = lines[:8] + ([f"… and {len(lines) - 8} more"] if len(lines) > 8 else [])
        ax.text(
            0.02,
            0.97,
            "\n".join(shown),
            transform=ax.transAxes,
            va="top",
            fontsize=7.5,
            color="tab:red",
            bbox={"fc": "white", "ec": "0.8", "alpha": 0.9},
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return save(fig, out)


def from_bench(result: dict, out: str | Path, kernel: str | None = None, impl: str = "triton") -> Path:
    """The roofline from `tritonlab bench --json` output: its measured peaks, one point per row; the rows of
    `kernel` (default: the first row's kernel) are the highlighted ones."""
    peaks = result.get("peaks") or {}
    if not peaks.get("copy_gbps") or not peaks.get("matmul_bf16_tflops"):
        raise ValueError("these bench results have no measured peaks (they come from a GPU run)")
    rows = [r for r in result.get("rows", []) if "ms" in r.get("impls", {}).get(impl, {})]
    if not rows:
        raise ValueError(f"no {impl} timings in these bench results")
    kernel = kernel or rows[0].get("kernel")
    if not any(r.get("kernel") == kernel for r in rows):
        raise ValueError(f"no {impl} timing of {kernel!r} in these bench results")
    points = []
    for row in rows:
        shape = "×".join(str(s) for s in row.get("shape", []))
        points.append(
            Point(
                f"{row.get('kernel')} {row.get('dtype', '')} {shape}".strip(),
                float(row.get("flops") or 0),
                float(row.get("bytes") or 0),
                float(row["impls"][impl]["ms"]) / 1e3,
                row.get("kernel") == kernel,
            )
        )
    return roofline(
        out,
        peak_gbps=float(peaks["copy_gbps"]),
        peak_tflops=float(peaks["matmul_bf16_tflops"]),
        others=points,
        title=f"Roofline of {result.get('env', {}).get('gpu', 'this GPU')} ({kernel} highlighted)",
    )
