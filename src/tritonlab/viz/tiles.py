"""PARENT side: GEMM tile maps — which C tile each program computed, in which launch order, and which parts
of A and B the first programs of the launch read.

Launch order is the linear program id x + gx·(y + gy·z): the order in which a GPU hands programs out (the
interpreter runs them one by one, but the picture is about the GPU). Programs launched together share the
A row-blocks and B column-blocks they read in L2; grouped ordering makes that set smaller than row-major.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from tritonlab.viz import logview as lv
from tritonlab.viz.style import OOB, figure, program_color, rgb, save


def linear_id(program: dict, grid: list[int]) -> int:
    x, y, z = program["pid"]
    gx, gy = (grid + [1, 1])[:2]
    return int(x + gx * (y + gy * z))


def grouped_order(tiles_m: int, tiles_n: int, group_m: int) -> np.ndarray:
    """Launch position of every (tile row, tile column) under grouped ordering (Triton's tutorial)."""
    order = np.zeros((tiles_m, tiles_n), dtype=np.int64)
    for pid in range(tiles_m * tiles_n):
        per_group = group_m * tiles_n
        first_m = (pid // per_group) * group_m
        rows_here = min(tiles_m - first_m, group_m)
        local = pid % per_group
        order[first_m + local % rows_here, local // rows_here] = pid
    return order


def footprint(order: np.ndarray, count: int, bm: int, bn: int, shape: tuple[int, int]) -> tuple[float, float]:
    """Shares of A's rows and B's columns that the first `count` tiles of an order need (all of K each)."""
    rows = {int(i) for i, _ in np.argwhere((order >= 0) & (order < count))}
    cols = {int(j) for _, j in np.argwhere((order >= 0) & (order < count))}
    m = sum(max(0, min(bm, shape[0] - i * bm)) for i in rows)
    n = sum(max(0, min(bn, shape[1] - j * bn)) for j in cols)
    return m / max(shape[0], 1), n / max(shape[1], 1)


def roles(launch: dict) -> tuple[int | None, int | None, int | None]:
    """(A, B, C): C is the stored 2-D tensor; A shares C's rows, B shares C's columns."""
    pairs = lv.touched_pairs(launch)
    two_d = [t for t, _ in pairs if len(launch["tensors"][t]["shape"]) == 2]
    stored = [t for t, op in pairs if op == "store" and t in two_d]
    if not stored:
        return None, None, None
    c = stored[0]
    m, n = launch["tensors"][c]["shape"]
    loaded = [t for t, op in pairs if op == "load" and t in two_d and t != c]
    a = next((t for t in loaded if launch["tensors"][t]["shape"][0] == m), loaded[0] if loaded else None)
    b = next(
        (t for t in loaded if t != a and launch["tensors"][t]["shape"][1] == n),
        next((t for t in loaded if t != a), None),
    )
    return a, b, c


def c_tiles(launch: dict, c: int) -> list[dict]:
    """Per program: its launch position and the C tile (row/column ranges, masked lanes included) it stored."""
    where_all = lv.placed(launch, c, "store")
    found = []
    for number, program in enumerate(launch["programs"]):
        pts = [where for _ln, where in where_all.get(number, [])]
        if not pts:
            continue
        where = np.concatenate(pts)
        (r0, c0), (r1, c1) = where.min(axis=0).astype(int), where.max(axis=0).astype(int)
        found.append(
            {
                "number": number,
                "order": linear_id(program, launch["grid"]),
                "rows": (r0, r1),
                "cols": (c0, c1),
            }
        )
    return found


def tile_grid(tiles: list[dict], shape: tuple[int, int]) -> tuple[np.ndarray, int, int]:
    """Launch position per (tile row, tile column); -1 where no program stored. Also the tile size."""
    bm = max(t["rows"][1] - t["rows"][0] + 1 for t in tiles)
    bn = max(t["cols"][1] - t["cols"][0] + 1 for t in tiles)
    grid = np.full((max(1, math.ceil(shape[0] / bm)), max(1, math.ceil(shape[1] / bn))), -1, dtype=np.int64)
    for t in tiles:
        i, j = t["rows"][0] // bm, t["cols"][0] // bn
        if 0 <= i < grid.shape[0] and 0 <= j < grid.shape[1]:
            grid[i, j] = t["order"]
    return grid, bm, bn


def _order_panel(
    ax: Any,
    order: np.ndarray,
    bm: int,
    bn: int,
    shape: tuple[int, int],
    title: str,
    wave: list[dict] | None = None,
) -> None:
    from matplotlib.patches import Rectangle

    tm, tn = order.shape
    shown = np.ma.masked_less(order.astype(float), 0)
    ax.imshow(
        shown,
        cmap="viridis",
        interpolation="nearest",
        extent=(-0.5, tn * bn - 0.5, tm * bm - 0.5, -0.5),
        vmin=0,
        vmax=max(1, order.max()),
        alpha=0.85,
    )
    ax.add_patch(Rectangle((-0.5, -0.5), shape[1], shape[0], fill=False, edgecolor="black", lw=1.5))
    centers = {}
    for (i, j), pos in np.ndenumerate(order):
        if pos >= 0:
            centers[int(pos)] = ((j + 0.5) * bn - 0.5, (i + 0.5) * bm - 0.5)
            if order.size <= 256:
                ax.text(
                    *centers[int(pos)],
                    str(pos),
                    ha="center",
                    va="center",
                    fontsize=7 if order.size > 64 else 9,
                    color="white" if pos < 0.6 * max(1, order.max()) else "black",
                )
    path = [centers[k] for k in sorted(centers)]
    if 1 < len(path) <= 400:
        xs, ys = zip(*path, strict=True)
        ax.plot(xs, ys, color="white", lw=0.8, alpha=0.7)
    for number, t in enumerate(wave or []):
        ax.add_patch(
            Rectangle(
                (t["cols"][0] - 0.5, t["rows"][0] - 0.5),
                t["cols"][1] - t["cols"][0] + 1,
                t["rows"][1] - t["rows"][0] + 1,
                fill=False,
                lw=2.2,
                edgecolor=program_color(number),
            )
        )
    ax.set_xlim(-0.5, max(tn * bn, shape[1]) - 0.5)
    ax.set_ylim(max(tm * bm, shape[0]) - 0.5, -0.5)
    ax.set_xlabel("column of C")
    ax.set_ylabel("row of C")
    ax.set_title(title, fontsize=9, loc="left")


def _reads_panel(ax: Any, launch: dict, tensor: int, wave: list[dict], name: str) -> float:
    """Elements of A (or B) read by the wave's programs, coloured like their C tiles; returns the fraction."""
    meta = launch["tensors"][tensor]
    shape = tuple(meta["shape"])
    image = np.ones(shape + (4,))
    image[..., 3] = 0.0
    seen = np.zeros(shape, dtype=bool)
    oob_pts = []
    where_all = lv.placed(launch, tensor)
    for colour_index, t in enumerate(wave):
        for ln, where in where_all.get(t["number"], []):
            found, idx = lv.coords(meta, ln.offsets[ln.inside])
            idx = tuple(idx[found].T)
            fresh = ~seen[idx]
            image[tuple(a[fresh] for a in idx)] = (*rgb(program_color(colour_index)), 1.0)
            seen[idx] = True
            if ln.oob.any():
                oob_pts.append(where[ln.oob])
    ax.imshow(image, interpolation="nearest", aspect="auto")
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((-0.5, -0.5), shape[1], shape[0], fill=False, edgecolor="black", lw=1.2))
    if oob_pts:
        pts = np.concatenate(oob_pts)
        ax.scatter(pts[:, 1], pts[:, 0], marker="x", s=12, color=OOB, lw=1)
    fraction = float(seen.mean()) if seen.size else 0.0
    ax.set_title(
        f"{name} = {lv.name(meta)} [{shape[0]}×{shape[1]}]: {fraction:.0%} read by the boxed programs",
        fontsize=9,
        loc="left",
    )
    ax.set_xlabel("k" if name == "A" else f"column of {name}")
    ax.set_ylabel("k" if name == "B" else f"row of {name}")
    return fraction


def gemm(launch: dict, out: str | Path, title: str = "", wave_size: int | None = None) -> Path | None:
    """The tile picture of a matmul launch; None when the launch has no output tiles to draw."""
    a, b, c = roles(launch)
    tiles = c_tiles(launch, c) if c is not None else []
    if c is None or not tiles:
        return None
    shape = tuple(launch["tensors"][c]["shape"])
    order, bm, bn = tile_grid(tiles, shape)
    tm, tn = order.shape
    row_major = np.arange(tm * tn).reshape(tm, tn)
    by_order = sorted(tiles, key=lambda t: t["order"])
    wave = by_order[: wave_size or min(len(by_order), max(tm, tn, 2))]
    if np.array_equal(order, row_major) or tm == 1:
        group = max(2, min(8, tm // 2))
        other, other_name = grouped_order(tm, tn, group), f"grouped order, GROUP_M={group} (for comparison)"
    else:
        other, other_name = row_major, "row-major order (for comparison)"
    fig = figure(12, 9.5)
    axes = fig.subplots(2, 2, squeeze=False)
    share_a = _reads_panel(axes[1, 0], launch, a, wave, "A") if a is not None else 0.0
    share_b = _reads_panel(axes[1, 1], launch, b, wave, "B") if b is not None else 0.0
    for ax in (axes[1, 0], axes[1, 1]):
        if not ax.images:
            ax.axis("off")
    first = f"first {len(wave)}"
    _order_panel(
        axes[0, 0],
        order,
        bm,
        bn,
        shape,
        f"C: your launch order ({len(tiles)} programs, {bm}×{bn} tiles)\nboxes: the {first}, which read "
        f"{share_a:.0%} of A and {share_b:.0%} of B",
        wave,
    )
    other_a, other_b = footprint(other, len(wave), bm, bn, shape)
    _order_panel(
        axes[0, 1],
        other,
        bm,
        bn,
        shape,
        f"{other_name}\nits {first} would read {other_a:.0%} of A and {other_b:.0%} of B",
    )
    fig.suptitle(title or launch["kernel"], fontsize=10)
    return save(fig, out)


def order_summary(launch: dict) -> dict:
    """Plain numbers for tests and JSON answers: tile size and the launch position of every tile."""
    _, _, c = roles(launch)
    tiles = c_tiles(launch, c) if c is not None else []
    if not tiles:
        return {}
    order, bm, bn = tile_grid(tiles, tuple(launch["tensors"][c]["shape"]))
    return {"tile": [bm, bn], "order": order.tolist()}
