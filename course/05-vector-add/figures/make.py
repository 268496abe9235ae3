"""Regenerate this lesson's figures: python figures/make.py [OUTDIR] (default: this folder).

The figure is computed by simulating, on the host, which elements each kernel variant writes.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

N, BLOCK, GUARD = 10, 4, 2


def written(variant: str) -> set[int]:
    """Buffer positions (guard zone included) that a kernel variant writes, for output length N."""
    programs = (N + BLOCK - 1) // BLOCK
    positions = set()
    for pid in range(programs):
        for lane in range(BLOCK):
            i = pid * BLOCK + lane
            limit = N - 1 if variant == "off-by-one mask" else N
            if i < limit:
                positions.add(GUARD + i + (1 if variant == "store shifted by one" else 0))
    return positions


def protocol(out: Path) -> None:
    rows = [
        ("before the launch", None),
        ("correct kernel", "correct"),
        ("bug: mask offsets < n - 1", "off-by-one mask"),
        ("bug: stores to out + offsets + 1", "store shifted by one"),
    ]
    total = N + 2 * GUARD
    fig, ax = plt.subplots(figsize=(9.0, 3.6))
    ax.set_xlim(-4.6, total + 0.2)
    ax.set_ylim(-len(rows) * 1.1 - 0.6, 1.3)
    ax.axis("off")
    ax.set_title(
        f"Poisoned output inside guard zones (n = {N}, BLOCK = {BLOCK}, guard = {GUARD} on each side)",
        fontsize=10.5,
    )
    ax.text(GUARD / 2, 0.55, "guard", ha="center", fontsize=8, color="#555555")
    ax.text(
        GUARD + N / 2,
        0.55,
        "output view: buffer[guard : guard + n]",
        ha="center",
        fontsize=8,
        color="#555555",
    )
    ax.text(GUARD + N + GUARD / 2, 0.55, "guard", ha="center", fontsize=8, color="#555555")
    for r, (label, variant) in enumerate(rows):
        y = -r * 1.1
        writes = written(variant) if variant else set()
        ax.text(-0.2, y - 0.05, label, ha="right", va="center", fontsize=8.5)
        for k in range(total):
            in_guard = k < GUARD or k >= GUARD + N
            if k in writes and in_guard:
                color, text = "#c44e52", "!!"  # a write into the guard zone: caught
            elif k in writes:
                color, text = "#55a868", "x+y"
            elif in_guard:
                color, text = "#bbbbbb", "S"
            else:
                color, text = "#f2c14e" if variant else "#f7e3a1", "NaN"
            ax.add_patch(
                Rectangle((k, y - 0.45), 0.95, 0.8, facecolor=color, edgecolor="black", lw=0.6, alpha=0.85)
            )
            ax.text(k + 0.47, y - 0.05, text, ha="center", va="center", fontsize=7)
        if variant and variant != "correct":
            catch = (
                "caught: NaN left"
                if variant == "off-by-one mask"
                else "caught: sentinel overwritten, NaN left"
            )
            ax.text(total + 0.1, y - 0.05, catch, fontsize=8, va="center", color="#c44e52")
    ax.text(
        -4.5,
        -len(rows) * 1.1 - 0.3,
        "S = sentinel value, NaN = poison, x+y = written by the kernel, !! = write outside the output",
        fontsize=8,
        color="#444444",
    )
    fig.tight_layout()
    fig.savefig(out / "protocol.png", dpi=100)
    plt.close(fig)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    protocol(out)


if __name__ == "__main__":
    main()
