"""Regenerate the figures of lesson 10: python figures/make.py [OUTDIR]

debug_layers.png: the layered debugging order (semantics -> numerics -> memory safety -> speed).
ladder.png: the practical ladder from a first kernel to production kernels.
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
os.makedirs(OUT, exist_ok=True)


def boxes(filename, title, items, colors, width=7.6):
    fig, ax = plt.subplots(figsize=(width, 0.75 * len(items) + 1.0), dpi=100)
    n = len(items)
    for i, (head, text) in enumerate(items):
        y = i * 1.0
        ax.add_patch(FancyBboxPatch((0.0 + 0.25 * i, y), 6.2, 0.78, boxstyle="round,pad=0.03,rounding_size=0.1",
                                    fc=colors[i % len(colors)], ec="#333333", lw=0.8))
        ax.text(0.15 + 0.25 * i, y + 0.52, head, fontsize=10, weight="bold", va="center")
        ax.text(0.15 + 0.25 * i, y + 0.22, text, fontsize=8.3, va="center")
    ax.annotate("", xy=(7.3 + 0.25 * (n - 1), n - 0.3), xytext=(7.3, 0.2),
                arrowprops=dict(arrowstyle="->", lw=1.5, color="#555555"))
    ax.text(7.5 + 0.12 * (n - 1), n / 2, "climb only when\nthe rung below holds", fontsize=8, rotation=90,
            va="center", color="#555555")
    ax.set_xlim(-0.2, 8.4 + 0.25 * (n - 1))
    ax.set_ylim(-0.2, n + 0.1)
    ax.axis("off")
    ax.set_title(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, filename))
    plt.close(fig)


def main():
    boxes(
        "debug_layers.png",
        "Layered debugging: fix each layer before looking at the next",
        [
            ("0. static checks", "tl.static_assert on constexprs, host-side asserts on shapes, dtypes, devices"),
            ("1. semantics (interpreter)", "tiny odd shapes, strided views, print / pdb in kernels, poisoned outputs"),
            ("2. numerics", "float64 reference, dtype-aware tolerances, extreme values, -inf, fp16 / bf16"),
            ("3. memory safety (GPU)", "compute-sanitizer memcheck, TRITON_DEBUG=1 device asserts"),
            ("4. speed (GPU)", "roofline, honest benchmark, sweep, then autotune"),
        ],
        ["#e8f1fa", "#dcebf7", "#cfe3f3", "#c2dbef", "#b5d3eb"],
    )
    boxes(
        "ladder.png",
        "The practical ladder from a first kernel to production",
        [
            ("1. correct kernels", "vector add, copies, masks, strides: tested on the interpreter"),
            ("2. memory-bound at the roof", "fused element-wise and row kernels (softmax, norms) near HBM bandwidth"),
            ("3. tiled compute", "tl.dot GEMMs, grouped order, fused epilogues, autotuning"),
            ("4. persistent kernels", "one program per SM looping over tiles; stream-K, split-K"),
            ("5. Hopper features", "TMA via tensor descriptors, warp specialisation, deeper pipelines"),
            ("6. fused attention", "online softmax + two GEMMs per tile (FlashAttention-style)"),
            ("7. read production code", "Liger-Kernel, the Triton tutorials, TorchInductor-generated kernels"),
        ],
        ["#eef6e8", "#e3f0da", "#d8eacc", "#cde4be", "#c2deb0", "#b7d8a2", "#acd294"],
        width=8.2,
    )
    print("wrote", sorted(f for f in os.listdir(OUT) if f.endswith(".png")))


if __name__ == "__main__":
    main()
