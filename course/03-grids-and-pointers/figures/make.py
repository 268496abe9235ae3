"""Regenerate this lesson's figures: python figures/make.py [OUTDIR] (default: this folder)."""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch, Rectangle  # noqa: E402

COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b2"]


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def programs_offsets(out: Path, n: int = 10, block: int = 4, element_size: int = 4) -> None:
    programs = cdiv(n, block)
    cells = programs * block
    fig, ax = plt.subplots(figsize=(9.0, 3.4))
    ax.set_xlim(-1.9, cells + 0.2)
    ax.set_ylim(-3.3, 1.6)
    ax.axis("off")
    ax.set_title(f"n = {n}, BLOCK = {block}: grid = cdiv({n}, {block}) = {programs} programs", fontsize=11)
    ax.text(-0.15, 1.25, "offset", ha="right", fontsize=8, color="#444444")
    ax.text(-0.15, 0.45, "element", ha="right", va="center", fontsize=8, color="#444444")
    ax.text(-0.15, -0.35, "byte offset", ha="right", va="center", fontsize=8, color="#444444")
    for k in range(cells):
        pid = k // block
        inside = k < n
        ax.add_patch(
            Rectangle(
                (k, 0),
                0.95,
                0.9,
                facecolor=COLORS[pid % len(COLORS)] if inside else "white",
                alpha=0.35 if inside else 1.0,
                edgecolor="black" if inside else "#999999",
                hatch=None if inside else "///",
                linestyle="-" if inside else "--",
            )
        )
        ax.text(k + 0.47, 1.2, str(k), ha="center", fontsize=8)
        ax.text(
            k + 0.47,
            0.45,
            f"x[{k}]" if inside else "past\nend",
            ha="center",
            va="center",
            fontsize=7.5,
            color="black" if inside else "#999999",
        )
        ax.text(
            k + 0.47, -0.35, f"+{k * element_size}", ha="center", va="center", fontsize=7, color="#555555"
        )
    for pid in range(programs):
        x0 = pid * block
        ax.add_patch(
            FancyBboxPatch(
                (x0 + 0.08, -1.55),
                block - 0.25,
                0.6,
                boxstyle="round,pad=0.04",
                facecolor=COLORS[pid % len(COLORS)],
                alpha=0.85,
            )
        )
        ax.text(
            x0 + block / 2 - 0.05, -1.25, f"pid = {pid}", ha="center", va="center", color="white", fontsize=9
        )
        offs = list(range(pid * block, pid * block + block))
        ax.text(
            x0 + block / 2 - 0.05, -2.05, f"{pid}·{block} + tl.arange(0, {block})", ha="center", fontsize=8
        )
        ax.text(x0 + block / 2 - 0.05, -2.5, f"= {offs}", ha="center", fontsize=8)
    ax.text(
        -1.85,
        -3.15,
        f"x_ptr + offsets points {element_size}·offset bytes past x.data_ptr() (float32). "
        f"The last program's offsets {n}..{cells - 1} fall past the end: a mask must switch them off.",
        fontsize=8,
        color="#444444",
    )
    fig.tight_layout()
    fig.savefig(out / "programs_offsets.png", dpi=100)
    plt.close(fig)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    programs_offsets(out)


if __name__ == "__main__":
    main()
