"""PARENT side: pictures of one recorded case (matplotlib, Agg; PNG or SVG by the file's suffix).

- `strip`: 1-D programs over elements — one row per program, each lane at the element it addressed;
  masked lanes hatched, out-of-bounds accesses red.
- `access_map`: 2-D maps for copy / transpose / bias / softmax — every element coloured by the program that
  loaded (source) or stored (destination) it, tile outlines with the program id, masked parts of a tile
  hatched outside the tensor, out-of-bounds accesses as red crosses.
- GEMM tile maps: `tiles.py`; roofline: `roofline.py`. `draw` picks the right one for an exercise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tritonlab.viz import logview as lv
from tritonlab.viz.style import (
    MASKED_HATCH,
    OOB,
    figure,
    legend_handles,
    message_figure,
    program_color,
    rgb,
    save,
)

MAX_ROWS = 64  # programs drawn in a strip


def caption(exercise: str, case: dict, launch: dict) -> str:
    consts = {
        k: v
        for k, v in launch.get("scalars", {}).items()
        if isinstance(v, int) and not isinstance(v, bool) and ("BLOCK" in k or "GROUP" in k)
    }
    grid = "×".join(str(g) for g in launch["grid"][: max(1, sum(1 for g in launch["grid"] if g > 1))])
    extra = ", ".join(f"{k}={v}" for k, v in consts.items())
    return f"{exercise} · case {case.get('name', '?')} · {launch['kernel']}[grid {grid}]" + (
        f" · {extra}" if extra else ""
    )


def _runs(offsets: np.ndarray, codes: np.ndarray) -> list[tuple[int, int, int]]:
    """(start, length, code) runs of consecutive offsets with one status code."""
    if len(offsets) == 0:
        return []
    order = np.lexsort((codes, offsets))
    offsets, codes = offsets[order], codes[order]
    keep = np.ones(len(offsets), dtype=bool)
    keep[1:] = (offsets[1:] != offsets[:-1]) | (codes[1:] != codes[:-1])
    offsets, codes = offsets[keep], codes[keep]
    breaks = np.flatnonzero((np.diff(offsets) != 1) | (np.diff(codes) != 0)) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(offsets)]])
    return [(int(offsets[s]), int(e - s), int(codes[s])) for s, e in zip(starts, ends, strict=True)]


def strip(launch: dict, out: str | Path, title: str = "") -> Path:
    pairs = lv.touched_pairs(launch)[:4] or [(None, "load")]
    programs = launch["programs"][:MAX_ROWS]
    rows = len(programs)
    fig = figure(10, 1.2 + len(pairs) * (0.6 + 0.22 * rows))
    axes = fig.subplots(len(pairs), 1, squeeze=False)[:, 0]
    for ax, (tensor, op) in zip(axes, pairs, strict=True):
        meta = launch["tensors"][tensor] if tensor is not None else {"numel": 0, "label": "?", "dtype": ""}
        n = int(meta["numel"])
        width = max((len(a["active"]) for p in programs for a in p["accesses"]), default=1)
        first = min(
            (
                min(a["offsets"])
                for p in programs
                for a in p["accesses"]
                if a["tensor"] == tensor and a["offsets"]
            ),
            default=0,
        )
        lo, hi = max(min(first, -max(1, n // 40)), -width), n + width
        hidden = 0
        for row, program in enumerate(programs):
            color = program_color(row)
            for access in program["accesses"]:
                if access["tensor"] != tensor or access["op"] != op:
                    continue
                ln = lv.lanes(access)
                codes = np.where(ln.oob, 2, np.where(ln.active, 0, 1))
                shown = (ln.offsets >= lo) & (ln.offsets < hi)
                hidden += int((~shown & ln.active).sum())
                for start, length, code in _runs(ln.offsets[shown], codes[shown]):
                    style: dict[str, Any] = {"facecolors": color, "edgecolors": "white", "linewidths": 0.3}
                    if code == 1:
                        style = {
                            "facecolors": "white",
                            "edgecolors": color,
                            "hatch": MASKED_HATCH,
                            "linewidths": 0.6,
                        }
                    elif code == 2:
                        style = {"facecolors": OOB, "edgecolors": "#800000", "linewidths": 0.6}
                    ax.broken_barh([(start - 0.5, length)], (row - 0.4, 0.8), **style)
                    if code == 2:  # one bad lane must stand out even when it is a pixel wide
                        ax.plot(
                            [start + (length - 1) / 2], [row - 0.45], marker="v", color=OOB, ms=6, zorder=5
                        )
        ax.axvspan(lo - 0.5, -0.5, color="0.92", zorder=0)
        ax.axvspan(n - 0.5, hi, color="0.92", zorder=0)
        ax.axvline(n - 0.5, color="black", lw=1, ls="--")
        ax.text(n - 0.5, 0.97, f" n = {n}", fontsize=8, va="top", transform=ax.get_xaxis_transform())
        ax.set_xlim(lo - 0.5, hi - 0.5)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_ylim(rows - 0.5, -1.0)
        ax.set_yticks(range(rows))
        labels = [lv.pid_label(p, launch["grid"]) for p in programs]
        ax.set_yticklabels(
            labels if rows <= 32 else [t if i % 4 == 0 else "" for i, t in enumerate(labels)], fontsize=7
        )
        ax.set_ylabel("program id")
        ax.set_xlabel("element index (offset from the tensor's start)")
        note = f"  ({hidden} active lanes far outside, not drawn)" if hidden else ""
        ax.set_title(f"{op} · {lv.name(meta)} ({meta['dtype']}, {n} elements){note}", loc="left", fontsize=9)
    more = (
        f" — first {MAX_ROWS} of {len(launch['programs'])} programs" if len(launch["programs"]) > rows else ""
    )
    fig.suptitle((title or launch["kernel"]) + more, fontsize=10)
    fig.legend(
        handles=legend_handles(
            [
                ("element accessed (colour = program)", {"facecolor": program_color(0)}),
                (
                    "masked lane (not accessed)",
                    {"facecolor": "white", "edgecolor": "0.3", "hatch": MASKED_HATCH},
                ),
                ("out-of-bounds access", {"facecolor": OOB}),
            ]
        ),
        loc="outside lower center",
        ncols=3,
        fontsize=8,
    )
    return save(fig, out)


def _owner_image(launch: dict, tensor: int, op: str) -> tuple[np.ndarray, np.ndarray]:
    """Per element: the first program (execution order) that accessed it, and how many programs did."""
    meta = launch["tensors"][tensor]
    shape = tuple(meta["shape"])
    owner = np.full(shape, -1, dtype=np.int64)
    count = np.zeros(shape, dtype=np.int64)
    for number, offs in lv.touched(launch, tensor, op).items():
        found, idx = lv.coords(meta, np.asarray(sorted(offs), dtype=np.int64))
        idx = tuple(idx[found].T)
        unset = owner[idx] < 0
        owner[tuple(a[unset] for a in idx)] = number
        count[idx] += 1
    return owner, count


def _paint(owner: np.ndarray) -> np.ndarray:
    image = np.ones(owner.shape + (4,))
    image[..., 3] = 0.0
    for number in np.unique(owner[owner >= 0]):
        image[owner == number] = (*rgb(program_color(int(number))), 1.0)
    return image


def _map_panel(ax: Any, launch: dict, tensor: int, op: str) -> None:
    from matplotlib.patches import Rectangle

    meta = launch["tensors"][tensor]
    rows, cols = meta["shape"]
    owner, count = _owner_image(launch, tensor, op)
    ax.add_patch(Rectangle((-0.5, -0.5), cols, rows, facecolor="white", edgecolor="black", lw=1.2, zorder=1))
    ax.imshow(_paint(owner), interpolation="nearest", zorder=2, extent=(-0.5, cols - 0.5, rows - 0.5, -0.5))
    shared = np.argwhere(count > 1)
    if len(shared) and len(shared) < 4000:
        ax.scatter(shared[:, 1], shared[:, 0], s=2, color="black", zorder=3)
    xs, ys = [-0.5, cols - 0.5], [-0.5, rows - 0.5]
    label_tiles = len(launch["programs"]) <= 64
    where_all = lv.placed(launch, tensor, op)
    for number, program in enumerate(launch["programs"]):
        pts = [where for _ln, where in where_all.get(number, [])]
        bad = [where[ln.oob] for ln, where in where_all.get(number, [])]
        if not pts:
            continue
        where = np.concatenate(pts)
        (r0, c0), (r1, c1) = where.min(axis=0), where.max(axis=0)
        color = program_color(number)
        ax.add_patch(
            Rectangle(
                (c0 - 0.5, r0 - 0.5),
                c1 - c0 + 1,
                r1 - r0 + 1,
                fill=False,
                hatch=MASKED_HATCH,
                edgecolor=color,
                lw=0.8,
                zorder=0.5,
            )
        )
        ax.add_patch(
            Rectangle(
                (c0 - 0.5, r0 - 0.5),
                c1 - c0 + 1,
                r1 - r0 + 1,
                fill=False,
                edgecolor="black",
                lw=0.5,
                ls=":",
                zorder=3,
            )
        )
        xs += [c0 - 0.5, c1 + 0.5]
        ys += [r0 - 0.5, r1 + 0.5]
        if label_tiles:
            inside_r = (max(r0, 0) + min(r1, rows - 1)) / 2
            inside_c = (max(c0, 0) + min(c1, cols - 1)) / 2
            ax.text(
                inside_c,
                inside_r,
                lv.pid_label(program, launch["grid"]),
                ha="center",
                va="center",
                fontsize=7,
                zorder=4,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.7, "lw": 0},
            )
        oob = np.concatenate(bad)
        if len(oob):
            ax.scatter(oob[:, 1], oob[:, 0], marker="x", s=14, color=OOB, zorder=5, lw=1)
    pad = 0.5
    ax.set_xlim(min(xs) - pad, max(xs) + pad)
    ax.set_ylim(max(ys) + pad, min(ys) - pad)
    ratio = (max(xs) - min(xs) + 1) / (max(ys) - min(ys) + 1)
    if not 1 / 3 <= ratio <= 3:  # rows of a softmax: square cells would make a hairline
        ax.set_aspect("auto")
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    role = "source" if op == "load" else "destination" if op == "store" else op
    ax.set_title(
        f"{op} · {lv.name(meta)} ({role}) [{rows}×{cols}], strides {tuple(meta['strides'])}",
        fontsize=9,
        loc="left",
    )


def _vector_panel(ax: Any, launch: dict, tensor: int, op: str) -> None:
    """A 1-D tensor inside a 2-D launch (a bias): which programs read which of its elements."""
    meta = launch["tensors"][tensor]
    n = int(meta["numel"])
    hits = lv.touched(launch, tensor, op)
    count = len(launch["programs"])
    grid = np.full((count, max(n, 1)), -1, dtype=np.int64)
    for number, offs in hits.items():
        found, idx = lv.coords(meta, np.asarray(sorted(offs), dtype=np.int64))
        grid[number, idx[found, 0]] = number
    ax.imshow(_paint(grid), interpolation="nearest", aspect="auto", extent=(-0.5, n - 0.5, count - 0.5, -0.5))
    for number, offs in lv.oob_offsets(launch, tensor).items():
        ax.scatter(sorted(offs), [number] * len(offs), marker="x", s=14, color=OOB, lw=1)
    ax.set_xlabel(f"element of {lv.name(meta)}")
    ax.set_ylabel("program (launch order)")
    ax.set_title(f"{op} · {lv.name(meta)} [{n}]: every program reads its slice again", fontsize=9, loc="left")


def access_map(launch: dict, out: str | Path, title: str = "") -> Path:
    pairs = [(t, op) for t, op in lv.touched_pairs(launch) if len(launch["tensors"][t]["shape"]) in (1, 2)][
        :4
    ]
    if not pairs:
        dims = sorted({len(launch["tensors"][t]["shape"]) for t, _ in lv.touched_pairs(launch)})
        seen = "/".join(str(d) for d in dims) or "no"
        why = f"nothing to draw: the kernel touched only {seen}-D tensors, and these pictures draw 1-D and 2-D ones"
        return message_figure(out, title or launch["kernel"], why)
    cols = min(len(pairs), 2)
    rows = (len(pairs) + cols - 1) // cols
    fig = figure(6.2 * cols, 5.2 * rows + 0.6)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, (tensor, op) in zip(axes, pairs, strict=False):
        if len(launch["tensors"][tensor]["shape"]) == 2:
            _map_panel(ax, launch, tensor, op)
        else:
            _vector_panel(ax, launch, tensor, op)
    for ax in axes[len(pairs) :]:
        ax.axis("off")
    fig.suptitle(title or launch["kernel"], fontsize=10)
    fig.legend(
        handles=legend_handles(
            [
                ("element (colour = program that accessed it)", {"facecolor": program_color(0)}),
                ("masked part of a tile", {"facecolor": "white", "edgecolor": "0.3", "hatch": MASKED_HATCH}),
                ("out-of-bounds access (×)", {"facecolor": OOB}),
                (
                    "white = never accessed; · = accessed by several programs",
                    {"facecolor": "white", "edgecolor": "0.5"},
                ),
            ]
        ),
        loc="outside lower center",
        ncols=2,
        fontsize=8,
    )
    return save(fig, out)


def draw(case: dict, exercise: str, out: str | Path) -> Path:
    """The picture for one recorded case (an entry of viz.json's "cases")."""
    from tritonlab.viz import tiles

    launch = lv.main_launch(case)
    if launch is None:
        why = "your function launched no kernel for this case"
        if case.get("exception"):
            exc = case["exception"]
            why = f"{exc.get('type')}: {exc.get('message')}\n{exc.get('where', '')}"
        return message_figure(out, f"{exercise} · case {case.get('name', '?')}: nothing to draw", why)
    title = caption(exercise, case, launch)
    if case.get("truncated"):
        title += " (log truncated)"
    kind = lv.kind_of(exercise, launch)
    if kind == "gemm":
        return tiles.gemm(launch, out, title) or access_map(launch, out, title)
    if kind == "strip":
        return strip(launch, out, title)
    return access_map(launch, out, title)
