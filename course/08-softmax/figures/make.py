"""Regenerate the figures of lesson 08: python figures/make.py [OUTDIR]

softmax_steps.png: the five steps of the stable row softmax on one 6-element row padded to BLOCK = 8.
"""

import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
os.makedirs(OUT, exist_ok=True)

ROW = [2.0, -1.0, 3.5, 0.5, 3.0, -2.0]
BLOCK = 8


def steps():
    x = ROW + [-math.inf] * (BLOCK - len(ROW))
    m = max(x)
    z = [v - m for v in x]
    e = [math.exp(v) for v in z]
    s = sum(e)
    y = [v / s for v in e]
    lanes = list(range(BLOCK))
    fig, axes = plt.subplots(1, 5, figsize=(13, 3.4), dpi=100, sharex=True)
    panels = [
        ("1. load, pad with -inf", x, "x"),
        (f"2. row max = {m}", x, "x"),
        ("3. subtract max", z, "x - max"),
        (f"4. exp, sum = {s:.3f}", e, "exp(x - max)"),
        ("5. divide, store 6 lanes", y, "softmax"),
    ]
    for k, (ax, (title, vals, ylabel)) in enumerate(zip(axes, panels, strict=True)):
        finite = [v if math.isfinite(v) else 0.0 for v in vals]
        colors = []
        for i, v in enumerate(vals):
            if i >= len(ROW):
                colors.append("#dddddd")
            elif k == 1 and v == m:
                colors.append("#d62728")
            else:
                colors.append("#4c72b0")
        ax.bar(lanes, finite, color=colors, edgecolor="black", lw=0.5)
        for i, v in enumerate(vals):
            if not math.isfinite(v):
                ypos = -0.3 if k == 2 else 0.05
                ax.text(i, ypos, "-inf", ha="center", va="top" if k == 2 else "bottom", fontsize=7,
                        rotation=90, color="gray")
            elif i >= len(ROW):
                ax.text(i, 0.02, "0", ha="center", fontsize=7, color="gray")
        if k == 1:
            ax.axhline(m, color="#d62728", ls="--", lw=1)
        ax.axhline(0, color="black", lw=0.6)
        ax.set_title(title, fontsize=9.5)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_xticks(lanes)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("lane (6 valid + 2 masked)", fontsize=7)
    fig.suptitle("A stable row softmax in five steps (grey lanes are masked padding)", fontsize=11)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "softmax_steps.png"))
    plt.close(fig)


if __name__ == "__main__":
    steps()
    print("wrote", sorted(f for f in os.listdir(OUT) if f.endswith(".png")))
