"""Regenerate the figures of lesson 11: python figures/make.py [OUTDIR]

dw_reduction.png: how dw is reduced across programs — bands of rows per program, each writing one row of
partial sums, then a second kernel adding the rows in a fixed order; beside it the atomic variant.
ce_memory.png: bytes of the logit-sized temporaries of a linear + cross-entropy layer, eager vs chunked, for
8192 tokens in bf16 and growing vocabularies (chunks of 8192 columns).
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches as patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
os.makedirs(OUT, exist_ok=True)

COLORS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a"]


def dw_reduction() -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), dpi=100)
    rows, programs = 12, 4
    band = rows // programs
    for ax, atomic in ((axes[0], False), (axes[1], True)):
        for r in range(rows):
            p = r // band
            ax.add_patch(patches.Rectangle((0, rows - 1 - r), 4, 0.9, color=COLORS[p], alpha=0.6))
        ax.text(2, rows + 0.3, "rows of x, dy (M × N)", ha="center", fontsize=8)
        if not atomic:
            for p in range(programs):
                y = rows - 1 - (p * band + 1)
                ax.add_patch(patches.Rectangle((6, y), 4, 0.9, color=COLORS[p], alpha=0.9))
                ax.annotate("", xy=(6, y + 0.45), xytext=(4, y + 0.45), arrowprops={"arrowstyle": "->"})
                ax.annotate("", xy=(12, 4.5), xytext=(10, y + 0.45), arrowprops={"arrowstyle": "->", "alpha": 0.5})
            ax.text(8, rows + 0.3, "partial (P × N), fp32", ha="center", fontsize=8)
            ax.add_patch(patches.Rectangle((12, 4), 4, 0.9, color="gray"))
            ax.text(14, 2.6, "dw = Σ rows, fixed order\n(second kernel)", ha="center", fontsize=8)
            ax.set_title("deterministic: one row of partial sums per program", fontsize=9)
        else:
            ax.add_patch(patches.Rectangle((12, 4), 4, 0.9, color="gray"))
            for p in range(programs):
                y = rows - 1 - (p * band + 1)
                ax.annotate("", xy=(12, 4.45), xytext=(4, y + 0.45), arrowprops={"arrowstyle": "->", "color": COLORS[p]})
            ax.text(14, 2.6, "dw (fp32, zeroed)\ntl.atomic_add, any order", ha="center", fontsize=8)
            ax.set_title("atomic: one launch, order of additions varies", fontsize=9)
        ax.set_xlim(-0.5, 17)
        ax.set_ylim(-0.5, rows + 1)
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "dw_reduction.png"))
    plt.close(fig)


def ce_memory() -> None:
    bt, chunk, elem = 8192, 8192, 2
    vocabs = [32000, 50257, 128256, 152064, 256000]
    eager = [bt * v * (elem + 4 + 4) / 1e9 for v in vocabs]
    chunked = [bt * min(chunk, v) * elem * 2 / 1e9 for v in vocabs]
    fig, ax = plt.subplots(figsize=(6.5, 4), dpi=100)
    x = range(len(vocabs))
    ax.bar([i - 0.2 for i in x], eager, 0.4, label="eager: logits + fp32 copy + saved log-softmax")
    ax.bar([i + 0.2 for i in x], chunked, 0.4, label="chunked: one BT × C buffer (+ its gradient)")
    ax.set_xticks(list(x), [f"{v // 1000}k" for v in vocabs])
    ax.set_xlabel("vocabulary size V")
    ax.set_ylabel("GB of logit-sized temporaries (BT = 8192, bf16)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "ce_memory.png"))
    plt.close(fig)


dw_reduction()
ce_memory()
