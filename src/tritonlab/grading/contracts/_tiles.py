"""CHILD side: the program → tile map of interpreted launches (which output rows and columns each program
stored to), for contracts that grade the order in which programs take their tiles (grouped-matmul-order).

Used in the check child (`run_case`) and in the fresh replay child (grading/replay/, for contracts with
`TILE_MAP = True` on the interpreter backend), which never imported the learner's module: there the map is
as trustworthy as the replayed outputs. Hook points, the same on Triton 3.6 through 3.9 (see viz/recorder.py):
`InterpreterBuilder.set_grid_idx` (which program runs), `InterpreterBuilder.create_masked_store` (its store
addresses and mask), `GridExecutor._init_args_hst` (the host copies of the arguments the kernel really uses).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

MAX_PROGRAMS = 4096  # programs kept in a map (the cases launch at most a few hundred)


class Tap:
    """Per program the interpreter runs: the addresses its active store lanes wrote (kept as min/max per
    output row and column once the output is known)."""

    def __init__(self) -> None:
        self.programs: list[dict] = []
        self.current: dict | None = None
        # (host storage start, end, device storage start): the interpreter runs on host copies of the
        # arguments' storages (on a GPU check, copies of CUDA memory), so addresses are mapped back
        self.storages: list[tuple[int, int, int]] = []

    def copies(self, pairs: list[tuple[Any, Any]]) -> None:
        for dev, host in pairs:
            if hasattr(dev, "untyped_storage") and hasattr(host, "untyped_storage"):
                lo = int(host.untyped_storage().data_ptr())
                hi = lo + int(host.untyped_storage().nbytes())
                self.storages.append((lo, hi, int(dev.untyped_storage().data_ptr())))

    def start(self, pid: tuple[int, int, int], grid: tuple[int, ...]) -> None:
        if len(self.programs) >= MAX_PROGRAMS:
            self.current = None
            return
        self.current = {"pid": [int(p) for p in pid], "grid": [int(g) for g in grid], "addr": []}
        self.programs.append(self.current)

    def store(self, ptrs: Any, mask: Any) -> None:
        if self.current is None:
            return
        addr = np.asarray(ptrs.data).astype(np.uint64).astype(np.int64).ravel()
        if mask is not None:
            active = np.broadcast_to(np.asarray(mask.data, dtype=bool), np.shape(ptrs.data)).ravel()
            addr = addr[active]
        for lo, hi, dev in self.storages:
            inside = (addr >= lo) & (addr < hi)
            addr = np.where(inside, addr - lo + dev, addr)
        self.current["addr"].append(addr)

    def tiles(self, out: Any) -> list[list[int]]:
        """[x, y, z, grid_x, grid_y, grid_z, row_min, row_max, col_min, col_max, elements] per program (-1 for
        a program that stored nothing into `out`)."""
        base, esize = int(out.data_ptr()), int(out.element_size())
        rows, cols = int(out.shape[0]), int(out.shape[1])
        s0, s1 = int(out.stride(0)), int(out.stride(1))
        kept = []
        for p in self.programs:
            addr = np.concatenate(p["addr"]) if p["addr"] else np.zeros(0, dtype=np.int64)
            rel = addr - base
            off = rel // esize
            ok = (rel % esize == 0) & (off >= 0)
            r, c = (off // s0, off % s0 // s1) if s1 and s0 else (off * 0, off * 0)
            ok &= (r < rows) & (c < cols) & (r * s0 + c * s1 == off)
            r, c = r[ok], c[ok]
            span = [int(r.min()), int(r.max()), int(c.min()), int(c.max())] if r.size else [-1, -1, -1, -1]
            kept.append(p["pid"] + p["grid"] + span + [int(np.unique(off[ok]).size)])
        return kept


@contextmanager
def recording() -> Iterator[Tap]:
    """Record every interpreted launch inside the block; `tap.tiles(out)` afterwards gives the map."""
    from triton.runtime.interpreter import GridExecutor, InterpreterBuilder, interpreter_builder

    tap = Tap()
    set_grid_idx = InterpreterBuilder.__dict__["set_grid_idx"]
    masked_store = InterpreterBuilder.__dict__["create_masked_store"]
    init_args = GridExecutor.__dict__["_init_args_hst"]

    def host_args(self: Any, args_dev: Any, kwargs: Any) -> Any:
        result = init_args(self, args_dev, kwargs)
        args_hst, kwargs_hst = result
        pairs = list(zip(args_dev, args_hst, strict=False)) + [
            (kwargs.get(k), v) for k, v in kwargs_hst.items()
        ]
        tap.copies(pairs)
        return result

    def grid_idx(self: Any, x: int, y: int, z: int) -> Any:
        result = set_grid_idx(self, x, y, z)
        tap.start((x, y, z), tuple(getattr(interpreter_builder, "grid_dim", ())))
        return result

    def store(self: Any, ptrs: Any, value: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        tap.store(ptrs, mask)
        return masked_store(self, ptrs, value, mask, *rest, **kw)

    InterpreterBuilder.set_grid_idx, InterpreterBuilder.create_masked_store = grid_idx, store
    GridExecutor._init_args_hst = host_args
    try:
        yield tap
    finally:
        InterpreterBuilder.set_grid_idx, InterpreterBuilder.create_masked_store = set_grid_idx, masked_store
        GridExecutor._init_args_hst = init_args


def tiles_of(tap: Tap, out: Any) -> list[list[int]] | None:
    """The map for a returned 2-D tensor (None for anything else)."""
    import torch

    if not isinstance(out, torch.Tensor) or out.ndim != 2:
        return None
    with torch.no_grad():
        return tap.tiles(out)
