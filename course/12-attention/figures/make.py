"""Regenerate the figures of lesson 12: python figures/make.py [OUTDIR]

tiling.png: the score matrix of one head cut into query blocks (rows, one program each) and key blocks
(columns, streamed by the program's loop); non-causal on the left, causal on the right, where the blocks above
the diagonal are never visited and the diagonal blocks are masked.
traffic.png: bytes moved by unfused and fused attention at batch 4, 32 heads, D = 128, bf16, for growing S.
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches as patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
os.makedirs(OUT, exist_ok=True)

S, BM, BN = 200, 64, 32  # a sequence length no block divides


def panel(ax, causal: bool) -> None:
    n_m, n_n = -(-S // BM), -(-S // BN)
    program = 2  # the query block whose loop is highlighted
    for i in range(n_m):
        for j in range(n_n):
            r0, c0 = i * BM, j * BN
            h, w = min(BM, S - r0), min(BN, S - c0)
            hi = min((i + 1) * BM, S) if causal else S
            visited = c0 < hi
            diagonal = causal and visited and c0 + w > r0
            tail = c0 + BN > S
            color = "#dddddd" if not visited else ("#f4a582" if diagonal else "#92c5de")
            if visited and i == program:
                color = "#d6604d" if diagonal else "#2166ac"
            ax.add_patch(patches.Rectangle((c0, r0), w, h, facecolor=color, edgecolor="white", lw=1))
            if visited and tail and i == program:
                ax.text(c0 + w / 2, r0 + h / 2, "tail", ha="center", va="center", fontsize=7, color="white")
    if causal:
        ax.plot([0, S], [0, S], color="black", lw=0.8, ls="--")
    ax.set_xlim(0, S)
    ax.set_ylim(S, 0)
    ax.set_aspect("equal")
    ax.set_xlabel(f"keys (blocks of BLOCK_N = {BN})")
    ax.set_ylabel(f"queries (blocks of BLOCK_M = {BM})")
    title = "causal: loop stops at the query block's end" if causal else "non-causal: every key block"
    ax.set_title(f"{title}\nS = {S}; dark = the loop of program {program}", fontsize=9)


def tiling() -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 5), dpi=100)
    panel(axes[0], False)
    panel(axes[1], True)
    handles = [
        patches.Patch(color="#92c5de", label="visited, no causal mask"),
        patches.Patch(color="#f4a582", label="visited, causal mask applied"),
        patches.Patch(color="#dddddd", label="never visited"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(os.path.join(OUT, "tiling.png"))
    plt.close(fig)


def traffic() -> None:
    b, h, d, elem = 4, 32, 128, 2
    lengths = [512, 1024, 2048, 4096, 8192, 16384]
    fused = [4 * b * h * s * d * elem / 1e9 for s in lengths]
    unfused = [f + 4 * b * h * s * s * elem / 1e9 for f, s in zip(fused, lengths, strict=True)]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    ax.loglog(lengths, unfused, "o-", label="unfused: Q, K, V, O + scores and P written and read")
    ax.loglog(lengths, fused, "s-", label="fused: Q, K, V, O only")
    ax.set_xlabel("sequence length S")
    ax.set_ylabel("GB moved (B=4, H=32, D=128, bf16)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "traffic.png"))
    plt.close(fig)


tiling()
traffic()
