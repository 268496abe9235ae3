"""Launch-parameter sweeps of the reference kernels (``tritonlab bench --all --sweep``): for each kernel a grid
of two launch parameters (BLOCK_SIZE, rows per program or tile size × num_warps, or stages × warps for the
GEMM), its inputs and how to launch it at one point; the CLI times every point and draws the heat map."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from . import load
from .case_base import rand as _r
from .cases import mm_inputs


@dataclass
class Sweep:
    """A launch-parameter grid for one kernel: ``run(x, y, args)`` launches with x (columns) and y (rows)."""

    kernel: str
    xlabel: str
    xs: list[int]
    ylabel: str
    ys: list[int]
    make: Callable[[], tuple[Any, ...]]
    run: Callable[[int, int, tuple[Any, ...]], Any]
    nbytes: int
    nflops: int
    note: str = ""


def sweep_for(name: str, device: str, tiny: bool = False) -> Sweep:
    """The --sweep grid of reference kernel ``name`` (BLOCK_SIZE/rows/tiles × num_warps, or stages for GEMM)."""
    if name == "vector_add":
        mod = load("vector_add")
        n = 2**14 if tiny else 2**26
        return Sweep(
            name,
            "BLOCK_SIZE",
            [128, 256, 512, 1024, 2048, 4096, 8192],
            "num_warps",
            [1, 2, 4, 8, 16],
            lambda: (_r((n,), torch.float32, device), _r((n,), torch.float32, device)),
            lambda x, y, a: mod.vector_add(*a, block_size=x, num_warps=y),
            mod.bytes_moved(n, 4),
            mod.flops(n),
            f"fp32, n = {n}",
        )
    if name in ("copy_2d", "transpose"):
        mod = load(name)
        m = n = 128 if tiny else 8192
        fn = getattr(mod, name)
        return Sweep(
            name,
            "BLOCK (square tile)",
            [16, 32, 64, 128],
            "num_warps",
            [1, 2, 4, 8, 16],
            lambda: (_r((m, n), torch.float32, device),),
            lambda x, y, a: fn(a[0], block_m=x, block_n=x, num_warps=y),
            mod.bytes_moved(m, n, 4),
            0,
            f"fp32, {m}x{n}",
        )
    if name in ("softmax", "rms_norm"):
        mod = load(name)
        n = 256 if tiny else 4096
        m = 64 if tiny else 2**26 // n
        if name == "softmax":

            def run(x, y, a):
                return mod.softmax(a[0], config={"kind": "onepass", "rows": x, "num_warps": y, "stages": 0})
        else:

            def run(x, y, a):
                return mod.rms_norm(
                    a[0], a[1], 1e-6, config={"kind": "onepass", "rows": x, "num_warps": y, "stages": 0}
                )

        return Sweep(
            name,
            "rows per program",
            [1, 2, 4, 8],
            "num_warps",
            [1, 2, 4, 8, 16, 32],
            lambda: (_r((m, n), torch.float32, device), _r((n,), torch.float32, device) + 1),
            run,
            mod.bytes_moved(m, n, 4),
            mod.flops(m, n),
            f"fp32, {m}x{n}",
        )
    if name in ("matmul", "matmul_bias_gelu"):
        mod = load("matmul")
        s = 64 if tiny else 4096
        dt = torch.float16 if tiny else torch.bfloat16
        base = {
            "kernel": "tma",
            "BM": 64 if tiny else 128,
            "BN": 64 if tiny else 128,
            "BK": 32 if tiny else 64,
            "GROUP_M": 8,
        }
        return Sweep(
            name,
            "num_stages",
            [2, 3, 4, 5],
            "num_warps",
            [4, 8],
            lambda: mm_inputs(s, s, s, dt, device),
            lambda x, y, a: mod.matmul(*a, config={**base, "num_stages": x, "num_warps": y}),
            mod.bytes_moved(s, s, s, dt.itemsize),
            mod.flops(s, s, s),
            f"{str(dt)[6:]} {s}^3, TMA persistent {base['BM']}x{base['BN']}x{base['BK']}",
        )
    raise KeyError(name)
