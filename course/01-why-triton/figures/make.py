"""Regenerate this lesson's figures: python figures/make.py [OUTDIR] (default: this folder)."""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402

DPI = 100


def spectrum(out: Path) -> None:
    # Qualitative positions (0..10 on both axes): an ordering, not a measurement.
    # Each entry: name, x, y, colour, label offset (dx, dy).
    tools = [
        ("eager PyTorch", 9.0, 3.0, "#4c72b0", (-0.3, -0.2)),
        ("torch.compile", 8.2, 5.6, "#4c72b0", (-0.3, -0.2)),
        ("Triton", 6.6, 8.0, "#c44e52", (-0.3, -0.3)),
        ("CUDA C++ / CUTLASS", 3.2, 9.2, "#55a868", (0.0, -0.75)),
        ("PTX / SASS by hand", 1.0, 9.6, "#8172b2", (0.2, 0.35)),
    ]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xs = [t[1] for t in tools]
    ys = [t[2] for t in tools]
    ax.plot(xs, ys, color="#bbbbbb", lw=1, zorder=1)
    for name, x, y, color, (dx, dy) in tools:
        ax.scatter([x], [y], s=140 if name == "Triton" else 80, color=color, zorder=2)
        ha = "right" if dx < 0 else "left" if dx > 0 else "center"
        ax.annotate(
            name,
            (x, y),
            xytext=(x + dx, y + dy),
            ha=ha,
            va="center",
            fontsize=10,
            fontweight="bold" if name == "Triton" else "normal",
        )
    ax.annotate(
        "the ninja gap",
        xy=(9.9, 3.0),
        xytext=(9.9, 9.6),
        ha="center",
        fontsize=9,
        color="#555555",
        arrowprops=dict(arrowstyle="<->", color="#888888"),
    )
    ax.set_xlim(0, 10.8)
    ax.set_ylim(1.5, 10.5)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("productivity: how fast you write and change code  →")
    ax.set_ylabel("efficiency: how close to the hardware limit  →")
    ax.set_title("The productivity–efficiency spectrum (qualitative)")
    fig.tight_layout()
    fig.savefig(out / "spectrum.png", dpi=DPI)
    plt.close(fig)


def blocks_vs_threads(out: Path) -> None:
    n, block = 16, 8
    fig, axes = plt.subplots(2, 1, figsize=(7.0, 3.4))
    colors = ["#4c72b0", "#dd8452"]
    for ax, title in zip(
        axes,
        [
            "CUDA: you write the code of one thread; one thread per element",
            "Triton: you write the code of one program; one program per block",
        ],
        strict=True,
    ):
        ax.set_xlim(-0.2, n + 0.2)
        ax.set_ylim(-1.3, 1.3)
        ax.axis("off")
        ax.set_title(title, fontsize=10, loc="left")
        for i in range(n):
            ax.add_patch(
                Rectangle((i, 0), 0.95, 0.9, facecolor=colors[i // block], alpha=0.35, edgecolor="black")
            )
            ax.text(i + 0.47, 0.45, str(i), ha="center", va="center", fontsize=8)
    for i in range(n):
        axes[0].annotate(
            "",
            xy=(i + 0.47, 0.0),
            xytext=(i + 0.47, -0.8),
            arrowprops=dict(arrowstyle="->", lw=0.8, color="#333333"),
        )
        axes[0].text(i + 0.47, -1.15, f"t{i}", ha="center", fontsize=7)
    for p in range(n // block):
        axes[1].add_patch(
            FancyBboxPatch(
                (p * block + 0.1, -1.1),
                block - 0.3,
                0.55,
                boxstyle="round,pad=0.05",
                facecolor=colors[p],
                alpha=0.8,
            )
        )
        axes[1].text(
            p * block + block / 2,
            -0.82,
            f"program {p}: tl.arange(0, {block}) + {p * block}",
            ha="center",
            va="center",
            fontsize=8,
            color="white",
        )
        axes[1].annotate(
            "",
            xy=(p * block + block / 2, 0.0),
            xytext=(p * block + block / 2, -0.5),
            arrowprops=dict(arrowstyle="->", lw=1.2),
        )
    fig.tight_layout()
    fig.savefig(out / "blocks_vs_threads.png", dpi=DPI)
    plt.close(fig)


def pipeline(out: Path) -> None:
    stages = [
        ("Python\n@triton.jit", "#dddddd"),
        ("Triton IR\n(TTIR)", "#c6dbef"),
        ("TritonGPU IR\n(TTGIR)", "#9ecae1"),
        ("LLVM IR", "#6baed6"),
        ("PTX", "#4292c6"),
        ("cubin\n(SASS)", "#2171b5"),
    ]
    notes = [
        "parse the\nfunction's AST",
        "attach layouts;\ncoalesce, pipeline",
        "per-thread\ncode",
        "LLVM NVPTX\nbackend",
        "ptxas",
    ]
    fig, ax = plt.subplots(figsize=(8.6, 2.3))
    ax.set_xlim(0, len(stages) * 1.5)
    ax.set_ylim(0, 2.0)
    ax.axis("off")
    for i, (name, color) in enumerate(stages):
        x = i * 1.5 + 0.1
        ax.add_patch(
            FancyBboxPatch((x, 0.9), 1.1, 0.8, boxstyle="round,pad=0.04", facecolor=color, edgecolor="black")
        )
        ax.text(
            x + 0.55, 1.3, name, ha="center", va="center", fontsize=8.5, color="white" if i >= 4 else "black"
        )
        if i < len(stages) - 1:
            ax.add_patch(
                FancyArrowPatch((x + 1.17, 1.3), (x + 1.43, 1.3), arrowstyle="->", mutation_scale=12)
            )
            ax.text(x + 1.3, 0.55, notes[i], ha="center", va="center", fontsize=7, color="#444444")
    ax.text(
        0.1,
        0.05,
        "compiled on first call for each new signature; cached on disk; "
        "the interpreter (TRITON_INTERPRET=1) skips all of it",
        fontsize=7.5,
        color="#444444",
    )
    fig.tight_layout()
    fig.savefig(out / "pipeline.png", dpi=DPI)
    plt.close(fig)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    spectrum(out)
    blocks_vs_threads(out)
    pipeline(out)


if __name__ == "__main__":
    main()
