"""Regenerate the figures of lesson 06: python figures/make.py [OUTDIR]

Everything drawn here is computed from formulas and datasheet peaks; nothing is measured.
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
os.makedirs(OUT, exist_ok=True)

# NVIDIA H200 SXM datasheet peaks (not measured).
PEAK_FLOPS = 990e12  # dense bf16 tensor-core FLOP/s
PEAK_BW = 4.8e12  # HBM3e bytes/s


def matmul_intensity(m, n, k, size):
    return 2 * m * n * k / (size * (m * k + k * n + m * n))


def roofline():
    ridge = PEAK_FLOPS / PEAK_BW
    x = np.logspace(-2, 4, 400)
    y = np.minimum(PEAK_FLOPS, x * PEAK_BW) / 1e12
    fig, ax = plt.subplots(figsize=(7.2, 4.4), dpi=110)
    ax.loglog(x, y, color="black", lw=2)
    ax.axvline(ridge, color="gray", ls=":", lw=1)
    ax.text(ridge * 1.1, 2.0, f"ridge ≈ {ridge:.0f} FLOP/B", color="gray", fontsize=9)
    ax.text(0.012, 0.012 * PEAK_BW / 1e12 * 1.6, "memory roof: 4.8 TB/s", rotation=33, fontsize=9)
    ax.text(400, PEAK_FLOPS / 1e12 * 1.15, "compute roof: 990 TFLOP/s", fontsize=9)
    points = [
        ("vector add (fp32)", 1 / 12, "tab:blue"),
        ("softmax (fp32)", 5 / 8, "tab:green"),
        ("decode GEMM\nM=16, N=K=4096 (bf16)", matmul_intensity(16, 4096, 4096, 2), "tab:orange"),
        ("GEMM 4096³ (bf16)", matmul_intensity(4096, 4096, 4096, 2), "tab:red"),
    ]
    for label, i, color in points:
        attainable = min(PEAK_FLOPS, i * PEAK_BW) / 1e12
        ax.plot([i], [attainable], "o", color=color, ms=8)
        ax.annotate(label, (i, attainable), textcoords="offset points", xytext=(6, -22), fontsize=8, color=color)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of DRAM traffic)")
    ax.set_ylabel("attainable TFLOP/s")
    ax.set_title("Roofline from the H200 datasheet peaks (datasheet, not measured)", fontsize=10)
    ax.set_ylim(1e-2, 3e3)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "roofline.png"))
    plt.close(fig)


def triangle():
    fig, ax = plt.subplots(figsize=(6.4, 5.0), dpi=110)
    pts = {
        "block": (0.5, 0.92),
        "res": (0.08, 0.12),
        "occ": (0.92, 0.12),
    }
    xs = [pts["block"][0], pts["res"][0], pts["occ"][0], pts["block"][0]]
    ys = [pts["block"][1], pts["res"][1], pts["occ"][1], pts["block"][1]]
    ax.fill(xs, ys, color="#e8f0fb")
    ax.plot(xs, ys, color="#2b5c9e", lw=2)
    box = dict(boxstyle="round,pad=0.4", fc="white", ec="#2b5c9e")
    ax.text(*pts["block"], "BLOCK size\n(work per program)", ha="center", va="center", fontsize=10, bbox=box)
    ax.text(*pts["res"], "resources per program\n(registers, shared memory)", ha="center", va="center",
            fontsize=10, bbox=box)
    ax.text(*pts["occ"], "occupancy\n(resident warps per SM)", ha="center", va="center", fontsize=10, bbox=box)
    ax.text(0.1, 0.6, "bigger blocks hold\nmore values per thread\n→ more registers", ha="center", fontsize=8.5,
            rotation=0)
    ax.text(0.5, -0.02, "more registers per program\n→ fewer programs fit on an SM", ha="center", fontsize=8.5)
    ax.text(0.9, 0.6, "fewer, bigger programs\n→ fewer warps to switch\nbetween while loads wait",
            ha="center", fontsize=8.5)
    ax.text(0.5, 0.42, "latency hiding =\nwarps × loads in flight\nper warp", ha="center", fontsize=9.5,
            color="#2b5c9e", weight="bold")
    ax.set_xlim(-0.15, 1.15)
    ax.set_ylim(-0.1, 1.05)
    ax.axis("off")
    ax.set_title("The trade-off triangle", fontsize=11)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "tradeoff_triangle.png"))
    plt.close(fig)


if __name__ == "__main__":
    roofline()
    triangle()
    print("wrote", sorted(f for f in os.listdir(OUT) if f.endswith(".png")))
