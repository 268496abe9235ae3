"""Regenerate the figures of lesson 09: python figures/make.py [OUTDIR]

tile_order.png: launch order of the output tiles of C for row-major and grouped (GROUP_M = 4) program
ordering on an 8 x 8 tile grid, with the first 16 programs highlighted and the blocks of A and B they load.
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
os.makedirs(OUT, exist_ok=True)

TILES_M, TILES_N, WAVE = 8, 8, 16


def grouped(pid, tiles_m, tiles_n, group_m):
    """Same arithmetic as the kernel in lesson.en.md: tile (row, col) computed by program `pid`."""
    per_group = group_m * tiles_n
    first_m = (pid // per_group) * group_m
    rows = min(tiles_m - first_m, group_m)
    local = pid % per_group
    return first_m + local % rows, local // rows


def panel(ax, group_m, title):
    order = {}
    for pid in range(TILES_M * TILES_N):
        order[grouped(pid, TILES_M, TILES_N, group_m)] = pid
    wave = {t for t, p in order.items() if p < WAVE}
    rows = {r for r, _ in wave}
    cols = {c for _, c in wave}
    for (r, c), p in order.items():
        fc = "#f4a582" if p < WAVE else "white"
        ax.add_patch(Rectangle((c, TILES_M - 1 - r), 1, 1, fc=fc, ec="gray", lw=0.6))
        ax.text(c + 0.5, TILES_M - 0.5 - r, str(p), ha="center", va="center", fontsize=8)
    # blocks of A (left) and B (top) loaded by the first wave
    for r in range(TILES_M):
        fc = "#92c5de" if r in rows else "#f0f0f0"
        ax.add_patch(Rectangle((-1.4, TILES_M - 1 - r), 1, 1, fc=fc, ec="gray", lw=0.6))
    for c in range(TILES_N):
        fc = "#92c5de" if c in cols else "#f0f0f0"
        ax.add_patch(Rectangle((c, TILES_M + 0.4), 1, 1, fc=fc, ec="gray", lw=0.6))
    ax.text(-0.9, -0.7, "A", ha="center", fontsize=10, weight="bold")
    ax.text(TILES_N + 0.3, TILES_M + 0.9, "B", va="center", fontsize=10, weight="bold")
    ax.text(TILES_N / 2, -0.8, f"first {WAVE} programs load {len(rows)} blocks of A + {len(cols)} of B "
            f"= {len(rows) + len(cols)}", ha="center", fontsize=9)
    ax.set_title(title, fontsize=10)
    ax.set_xlim(-1.6, TILES_N + 0.9)
    ax.set_ylim(-1.2, TILES_M + 1.6)
    ax.set_aspect("equal")
    ax.axis("off")


def tile_order():
    fig, axes = plt.subplots(1, 2, figsize=(10, 5.4), dpi=100)
    panel(axes[0], 1, "row-major order (GROUP_M = 1)")
    panel(axes[1], 4, "grouped order (GROUP_M = 4)")
    fig.suptitle("Which program computes which tile of C (numbers = program id)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(os.path.join(OUT, "tile_order.png"))
    plt.close(fig)


if __name__ == "__main__":
    tile_order()
    print("wrote", sorted(f for f in os.listdir(OUT) if f.endswith(".png")))
