"""Regenerate this lesson's figures: python figures/make.py [OUTDIR] (default: this folder).

Everything plotted is computed from element counts and the roofline formula; nothing is measured.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

P = 50e12  # illustrative peak FLOP/s
B = 2e12  # illustrative bandwidth, bytes/s


def bottlenecks(out: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 3.9))

    # Left: a chain of k unary elementwise ops on N elements.
    ks = np.arange(1, 7)
    eager = 2 * ks  # each kernel reads N and writes N elements
    fused = np.full_like(ks, 2)  # one kernel reads N and writes N
    w = 0.38
    left.bar(ks - w / 2, eager, width=w, label="eager: one kernel per op", color="#4c72b0")
    left.bar(ks + w / 2, fused, width=w, label="fused: one kernel", color="#c44e52")
    for k, e in zip(ks, eager, strict=True):
        left.text(k - w / 2, e + 0.15, f"{e}N", ha="center", fontsize=8)
    left.set_xlabel("number of elementwise operations in the chain (k)")
    left.set_ylabel("elements moved (× N)")
    left.set_title("Memory traffic: 2kN eager vs 2N fused", fontsize=10)
    left.set_xticks(ks)
    left.legend(fontsize=8, loc="upper left")

    # Right: roofline of an illustrative GPU, log-log.
    intensity = np.logspace(-2, 4, 200)
    attainable = np.minimum(P, intensity * B)
    right.loglog(intensity, attainable / 1e12, color="black")
    right.axvline(P / B, color="#888888", ls=":", lw=1)
    right.text(P / B * 1.15, 0.02, f"balance point\nP/B = {P / B:.0f} FLOP/byte", fontsize=8, color="#555555")
    n = 4096
    points = [
        ("y = x*2+1, eager (fp32)", 2 / 16, "#4c72b0"),  # 2 FLOP over 4 element transfers of 4 bytes
        ("y = x*2+1, fused (fp32)", 2 / 8, "#c44e52"),  # 2 FLOP over 2 element transfers of 4 bytes
        ("matmul 4096³ (bf16)", 2 * n**3 / (3 * n * n * 2), "#55a868"),  # 2n³ FLOP over 3 n² bf16 matrices
    ]
    for i, (name, ai, color) in enumerate(points):
        y = min(P, ai * B) / 1e12
        right.scatter([ai], [y], color=color, zorder=3, s=40)
        offset = [(1.5, 0.22, "left"), (1.6, 0.5, "left"), (1.4, 0.35, "left")][i]
        right.annotate(
            name, (ai, y), xytext=(ai * offset[0], y * offset[1]), ha=offset[2], fontsize=8, color=color
        )
    right.set_xlabel("arithmetic intensity (FLOP per byte)")
    right.set_ylabel("attainable TFLOP/s")
    right.set_title("Roofline of an illustrative GPU (P = 50 TFLOP/s, B = 2 TB/s)", fontsize=10)
    right.set_ylim(0.01, 200)
    fig.tight_layout()
    fig.savefig(out / "bottlenecks.png", dpi=100)
    plt.close(fig)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    bottlenecks(out)


if __name__ == "__main__":
    main()
