"""The benchmark cases of every reference kernel: shapes, fresh inputs, peers, bytes and FLOPs counted.

Shared by ``tritonlab bench`` and ``scripts/bench_gpu.py`` so that both measure exactly the same thing.
Peers: ``torch`` (eager), ``torch.compile`` (default mode, static shapes) and, for GEMMs, ``cuBLAS``
(``torch.matmul``). Inputs are drawn fresh (``torch.randn``, never zeros) each time :meth:`Case.make` runs.

This module is the list (``BUILDERS``, ``TINY``, :func:`cases_for`) and holds the GEMM-shaped cases of
``matmul``, ``matmul_bias_gelu`` and ``fused_linear_ce``; the memory-bound kernels' cases are in
``cases_memory.py``, attention and the Hopper GEMMs' in ``cases_compute.py``, the launch-parameter sweeps in
``sweeps.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from . import load
from .case_base import DT, PEER_FNS, Case, compiled
from .case_base import rand as _r
from .cases_compute import attention_backward_cases, attention_cases, matmul_fp8_cases, matmul_tma_cases
from .cases_memory import (
    copy_2d_cases,
    rms_norm_backward_cases,
    rms_norm_cases,
    softmax_cases,
    transpose_cases,
    vector_add_cases,
)


def _linear_gelu(a, b, bias):
    return torch.nn.functional.gelu(a @ b + bias)


PEER_FNS["linear_gelu"] = _linear_gelu


MATMUL_SHAPES: tuple[tuple[int, int, int], ...] = (
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (4096, 11008, 4096),
    (16, 4096, 4096),
)


def mm_inputs(m: int, n: int, k: int, dt: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    return _r((m, k), dt, device), _r((k, n), dt, device, k**-0.5)


def matmul_cases(
    device: str,
    shapes: tuple[tuple[int, int, int], ...] = MATMUL_SHAPES,
    dtypes: tuple[str, ...] = ("bf16", "fp16"),
) -> list[Case]:
    mod = load("matmul")
    out = []
    for dtype in dtypes:
        dt = DT[dtype]
        for m, n, k in shapes:
            out.append(
                Case(
                    "matmul",
                    dtype,
                    (m, n, k),
                    lambda m=m, n=n, k=k, dt=dt: mm_inputs(m, n, k, dt, device),
                    mod.matmul,
                    {"cuBLAS": torch.matmul},
                    mod.bytes_moved(m, n, k, dt.itemsize),
                    mod.flops(m, n, k),
                    "memory" if m <= 64 else "compute",
                    {"class": mod.shape_class(m, n, k), "hide_launch": m <= 64},
                )
            )
    return out


def matmul_bias_gelu_cases(
    device: str, shapes: tuple[tuple[int, int, int], ...] = ((8192, 8192, 8192),), dtype: str = "bf16"
) -> list[Case]:
    mod = load("matmul_bias_gelu")
    dt = DT[dtype]
    out = []
    for m, n, k in shapes:
        out.append(
            Case(
                "matmul_bias_gelu",
                dtype,
                (m, n, k),
                lambda m=m, n=n, k=k: (*mm_inputs(m, n, k, dt, device), _r((n,), dt, device)),
                mod.matmul_bias_gelu,
                {"torch": _linear_gelu, "torch.compile": lambda a, b, c: compiled("linear_gelu")(a, b, c)},
                mod.bytes_moved(m, n, k, dt.itemsize),
                mod.flops(m, n, k),
                "compute",
            )
        )
    return out


def _ce_step(loss_fn):
    def step(h, w, target):
        loss = loss_fn(h, w, target)
        loss.backward()
        return loss

    return step


def fused_linear_ce_cases(
    device: str, shape: tuple[int, int, int] = (8192, 128256, 4096), dtype: str = "bf16"
) -> list[Case]:
    """Forward + backward of the last layer and its loss (h: BT × D, W: V × D, bf16)."""
    mod = load("fused_linear_ce")
    bt, v, d = shape
    dt = DT[dtype]

    def make():
        h = _r((bt, d), dt, device).requires_grad_()
        w = (_r((v, d), dt, device) * d**-0.5).requires_grad_()
        return h, w, torch.randint(0, v, (bt,), device=device)

    return [
        Case(
            "fused_linear_ce",
            dtype,
            shape,
            make,
            _ce_step(mod.fused_linear_ce),
            {"torch": _ce_step(mod.eager_linear_ce)},
            mod.bytes_moved(bt, v, d, dt.itemsize),
            mod.flops(bt, v, d),
            "compute",
            {"what": "forward + backward"},
        )
    ]


BUILDERS: dict[str, Callable[..., list[Case]]] = {
    "vector_add": vector_add_cases,
    "copy_2d": copy_2d_cases,
    "transpose": transpose_cases,
    "softmax": softmax_cases,
    "rms_norm": rms_norm_cases,
    "matmul": matmul_cases,
    "matmul_bias_gelu": matmul_bias_gelu_cases,
    "rms_norm_backward": rms_norm_backward_cases,
    "attention": attention_cases,
    "attention_backward": attention_backward_cases,
    "matmul_tma": matmul_tma_cases,
    "matmul_fp8": matmul_fp8_cases,
    "fused_linear_ce": fused_linear_ce_cases,
}

#: Small shapes for ``--force-interpreter`` runs (they check the code path, not the speed).
TINY: dict[str, dict[str, Any]] = {
    "vector_add": {"sizes": [4096, 16384]},
    "copy_2d": {"shape": (64, 256)},
    "transpose": {"shape": (64, 128)},
    "softmax": {"cols": (256, 1024), "dtypes": ("fp32",), "elements": 4096},
    "rms_norm": {"specs": (("fp32", 512),), "elements": 4096},
    "matmul": {"shapes": ((64, 64, 64),), "dtypes": ("fp16",)},
    "matmul_bias_gelu": {"shapes": ((64, 64, 64),), "dtype": "fp16"},
    "rms_norm_backward": {"specs": (("fp32", 256),), "elements": 4096},
    "attention": {"shapes": ((1, 2, 64, 64),), "dtypes": ("fp16",)},
    "attention_backward": {"shapes": ((1, 2, 64, 64),), "dtypes": ("fp16",)},
    "matmul_tma": {"shapes": ((64, 64, 64), (16, 64, 128)), "dtypes": ("fp16",)},
    "matmul_fp8": {"shapes": ((64, 128, 256), (16, 128, 256))},
    "fused_linear_ce": {"shape": (64, 1000, 64), "dtype": "fp32"},
}


def cases_for(name: str, device: str, tiny: bool = False) -> list[Case]:
    """The standard cases of reference kernel ``name`` (tiny shapes for interpreter runs)."""
    builder = BUILDERS[name]
    return builder(device, **TINY[name]) if tiny else builder(device)
