"""Regenerate the figures of lesson 07: python figures/make.py [OUTDIR]

address_grid.png: a 3x4 row-major tensor in memory, its transposed view x.t() (shape 4x3, strides (1, 4)),
and the masked 2-D address grid one 4x4 program builds for that view.
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
os.makedirs(OUT, exist_ok=True)

M0, N0 = 3, 4  # the original tensor x, row-major
COLORS = ["#cfe2f3", "#d9ead3", "#fce5cd"]  # one colour per row of x


def cell(ax, x, y, text, fc, ec="black", fontsize=10, hatch=None):
    ax.add_patch(Rectangle((x, y), 1, 1, fc=fc, ec=ec, lw=1, hatch=hatch))
    ax.text(x + 0.5, y + 0.5, text, ha="center", va="center", fontsize=fontsize)


def address_grid():
    fig, ax = plt.subplots(figsize=(10.5, 5.2), dpi=100)
    # 1) memory strip
    ax.text(0, 7.4, "memory (storage of x, 12 floats)", fontsize=10, weight="bold")
    for a in range(M0 * N0):
        cell(ax, a, 6, str(a), COLORS[a // N0])
        ax.text(a + 0.5, 5.65, f"+{a}", ha="center", fontsize=7, color="gray")
    # 2) x, 3x4, strides (4, 1)
    ax.text(0, 4.6, "x: shape (3, 4), stride (4, 1)", fontsize=10, weight="bold")
    for i in range(M0):
        for j in range(N0):
            cell(ax, j, 3 - i, f"{i * N0 + j}", COLORS[i])
    # 3) xt = x.t(), 4x3, strides (1, 4)
    ox = 6
    ax.text(ox, 4.6, "x.t(): shape (4, 3), stride (1, 4)", fontsize=10, weight="bold")
    for i in range(N0):
        for j in range(M0):
            addr = i * 1 + j * 4
            cell(ax, ox + j, 3 - i, f"{addr}", COLORS[addr // N0])
    ax.text(ox, -1.0, "address(i, j) = i·1 + j·4", fontsize=9)
    # 4) one 4x4 program over x.t(): offs_m[:, None]*1 + offs_n[None, :]*4, mask n < 3
    ox2 = 12.2
    ax.text(ox2, 4.6, "BLOCK 4x4 address grid + mask", fontsize=10, weight="bold")
    for i in range(4):
        for j in range(4):
            addr = i * 1 + j * 4
            if j < M0:
                cell(ax, ox2 + j, 3 - i, f"{addr}", COLORS[addr // N0])
            else:
                cell(ax, ox2 + j, 3 - i, f"({addr})", "white", ec="gray", hatch="//", fontsize=8)
    ax.text(ox2, -1.0, "hatched: mask False (n ≥ 3), never loaded", fontsize=9)
    ax.text(ox2, -1.6, "offs_m[:, None]*1 + offs_n[None, :]*4", fontsize=9, family="monospace")
    ax.set_xlim(-0.3, 17.5)
    ax.set_ylim(-2.0, 7.8)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "address_grid.png"))
    plt.close(fig)


if __name__ == "__main__":
    address_grid()
    print("wrote", sorted(f for f in os.listdir(OUT) if f.endswith(".png")))
