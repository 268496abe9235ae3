"""Regenerate this lesson's figures: python figures/make.py [OUTDIR] (default: this folder)."""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402


def masked_lanes(out: Path, n: int = 10, block: int = 4) -> None:
    programs = (n + block - 1) // block
    pid = programs - 1  # the last program is the only one with masked lanes
    offsets = [pid * block + lane for lane in range(block)]
    mask = [o < n for o in offsets]

    fig, ax = plt.subplots(figsize=(8.4, 4.0))
    ax.set_xlim(-3.2, block * 1.6 + 0.3)
    ax.set_ylim(-5.6, 1.5)
    ax.axis("off")
    ax.set_title(
        f"The last program, pid = {pid} (n = {n}, BLOCK = {block}): "
        f"{sum(mask)} active lanes, {block - sum(mask)} masked",
        fontsize=11,
    )
    rows = [
        ("lane = tl.arange(0, BLOCK)", [str(lane) for lane in range(block)]),
        (f"offsets = {pid}·{block} + lane", [str(o) for o in offsets]),
        (f"mask = offsets < {n}", ["True" if m else "False" for m in mask]),
        ("tl.load(..., other=PAD)", [f"x[{o}]" if m else "PAD" for o, m in zip(offsets, mask, strict=True)]),
        (
            "tl.store(..., mask=mask)",
            [f"writes x[{o}]" if m else "no write" for o, m in zip(offsets, mask, strict=True)],
        ),
    ]
    for r, (label, cells) in enumerate(rows):
        y = -r * 1.2
        ax.text(-0.15, y + 0.4, label, ha="right", va="center", fontsize=9, family="monospace")
        for lane, text in enumerate(cells):
            active = mask[lane]
            ax.add_patch(
                Rectangle(
                    (lane * 1.6, y),
                    1.5,
                    0.8,
                    facecolor="#55a868" if active else "#eeeeee",
                    alpha=0.45 if active else 1.0,
                    edgecolor="black" if active else "#aaaaaa",
                    linestyle="-" if active or r < 2 else "--",
                )
            )
            ax.text(
                lane * 1.6 + 0.75,
                y + 0.4,
                text,
                ha="center",
                va="center",
                fontsize=8.5,
                color="black" if active or r < 2 else "#777777",
            )
    ax.text(
        -3.1,
        -5.4,
        "Masked lanes read no memory (they return PAD) and write nothing. "
        "Without the mask, lanes 2 and 3 would write past the end of the tensor.",
        fontsize=8,
        color="#444444",
    )
    fig.tight_layout()
    fig.savefig(out / "masked_lanes.png", dpi=100)
    plt.close(fig)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    masked_lanes(out)


if __name__ == "__main__":
    main()
