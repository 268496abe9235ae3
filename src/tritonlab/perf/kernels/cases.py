"""The benchmark cases of every reference kernel: shapes, fresh inputs, peers, bytes and FLOPs counted.

Shared by ``tritonlab bench`` and ``scripts/bench_gpu.py`` so that both measure exactly the same thing.
Peers: ``torch`` (eager), ``torch.compile`` (default mode, static shapes) and, for GEMMs, ``cuBLAS``
(``torch.matmul``). Inputs are drawn fresh (``torch.randn``, never zeros) each time :meth:`Case.make` runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from . import load
from .case_base import DT, PEER_FNS, Case, compiled
from .case_base import rand as _r
from .cases_compute import attention_backward_cases, attention_cases, matmul_fp8_cases, matmul_tma_cases


def _softmax(x):
    return torch.softmax(x, dim=-1)


def _rms(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def _rms_eager(x, w):
    if hasattr(torch.nn.functional, "rms_norm"):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6)
    return _rms(x, w)


def _linear_gelu(a, b, bias):
    return torch.nn.functional.gelu(a @ b + bias)


def _chain(x, y):
    return torch.nn.functional.gelu(x * 1.5 + 0.25, approximate="tanh") * y


PEER_FNS.update({
    "add": torch.add,
    "copy": lambda x: x.contiguous() if not x.is_contiguous() else x.clone(),
    "transpose": lambda x: x.t().contiguous(),
    "softmax": _softmax,
    "rms_norm": _rms,
    "linear_gelu": _linear_gelu,
    "chain": _chain,
})  # fmt: skip


def vector_add_cases(device: str, sizes: list[int] | None = None, dtype: str = "fp32") -> list[Case]:
    mod = load("vector_add")
    dt = DT[dtype]
    out = []
    for n in sizes or [2**28]:
        out.append(
            Case(
                "vector_add",
                dtype,
                (n,),
                lambda n=n: (_r((n,), dt, device), _r((n,), dt, device)),
                mod.vector_add,
                {"torch": torch.add, "torch.compile": lambda x, y: compiled("add")(x, y)},
                mod.bytes_moved(n, dt.itemsize),
                mod.flops(n),
                "memory",
            )
        )
    return out


def copy_2d_cases(device: str, shape: tuple[int, int] = (16384, 16384), pad: int = 64) -> list[Case]:
    mod = load("copy_2d")
    out = []
    m, n = shape
    for dtype in ("fp32", "bf16"):
        dt = DT[dtype]
        out.append(
            Case(
                "copy_2d",
                dtype,
                (m, n),
                lambda dt=dt: (_r((m, n + pad), dt, device)[:, :n],),
                mod.copy_2d,
                {"torch": lambda x: x.contiguous(), "torch.compile": lambda x: compiled("copy")(x)},
                mod.bytes_moved(m, n, dt.itemsize),
                0,
                "memory",
                {"source": f"column slice of a {m}x{n + pad} matrix"},
            )
        )
    return out


def transpose_cases(device: str, shape: tuple[int, int] = (16384, 16384)) -> list[Case]:
    mod = load("transpose")
    out = []
    m, n = shape
    for dtype in ("fp32", "bf16"):
        dt = DT[dtype]
        out.append(
            Case(
                "transpose",
                dtype,
                (m, n),
                lambda dt=dt: (_r((m, n), dt, device),),
                mod.transpose,
                {"torch": PEER_FNS["transpose"], "torch.compile": lambda x: compiled("transpose")(x)},
                mod.bytes_moved(m, n, dt.itemsize),
                0,
                "memory",
            )
        )
    return out


def softmax_cases(
    device: str,
    cols: tuple[int, ...] = (1024, 4096, 16384, 32768),
    dtypes: tuple[str, ...] = ("fp32", "bf16"),
    elements: int = 2**26,
) -> list[Case]:
    mod = load("softmax")
    out = []
    for dtype in dtypes:
        dt = DT[dtype]
        for n in cols:
            m = max(1, elements // n)
            out.append(
                Case(
                    "softmax",
                    dtype,
                    (m, n),
                    lambda m=m, n=n, dt=dt: (_r((m, n), dt, device, 3.0),),
                    mod.softmax,
                    {"torch": _softmax, "torch.compile": lambda x: compiled("softmax")(x)},
                    mod.bytes_moved(m, n, dt.itemsize),
                    mod.flops(m, n),
                    "memory",
                )
            )
    return out


def rms_norm_cases(
    device: str,
    specs: tuple[tuple[str, int], ...] = (("bf16", 4096), ("bf16", 8192), ("fp32", 4096)),
    elements: int = 2**26,
) -> list[Case]:
    mod = load("rms_norm")
    out = []
    for dtype, n in specs:
        dt = DT[dtype]
        m = elements // n
        out.append(
            Case(
                "rms_norm",
                dtype,
                (m, n),
                lambda m=m, n=n, dt=dt: (_r((m, n), dt, device), _r((n,), dt, device) + 1.0),
                lambda x, w: mod.rms_norm(x, w, 1e-6),
                {"torch": _rms_eager, "torch.compile": lambda x, w: compiled("rms_norm")(x, w)},
                mod.bytes_moved(m, n, dt.itemsize),
                mod.flops(m, n),
                "memory",
            )
        )
    return out


MATMUL_SHAPES: tuple[tuple[int, int, int], ...] = (
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (4096, 11008, 4096),
    (16, 4096, 4096),
)


def _mm_inputs(m: int, n: int, k: int, dt: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
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
                    lambda m=m, n=n, k=k, dt=dt: _mm_inputs(m, n, k, dt, device),
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
                lambda m=m, n=n, k=k: (*_mm_inputs(m, n, k, dt, device), _r((n,), dt, device)),
                mod.matmul_bias_gelu,
                {"torch": _linear_gelu, "torch.compile": lambda a, b, c: compiled("linear_gelu")(a, b, c)},
                mod.bytes_moved(m, n, k, dt.itemsize),
                mod.flops(m, n, k),
                "compute",
            )
        )
    return out


def elementwise_chain_cases(device: str, n: int = 2**28) -> list[Case]:
    mod = load("elementwise_chain")
    return [
        Case(
            "elementwise_chain",
            "fp32",
            (n,),
            lambda: (_r((n,), torch.float32, device), _r((n,), torch.float32, device)),
            mod.elementwise_chain,
            {"torch": _chain, "torch.compile": lambda x, y: compiled("chain")(x, y)},
            3 * n * 4,
            12 * n,
            "memory",
            {"eager_bytes": 9 * n * 4},
        )
    ]


def _rms_bwd_formula(x, w, dy):
    """The closed-form RMSNorm backward in torch ops (the same work as the kernel: no forward, no graph)."""
    xf, wf, dyf = x.float(), w.float(), dy.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    g = dyf * wf
    dx = rstd * g - xf * rstd.pow(3) * (g * xf).mean(-1, keepdim=True)
    return dx.to(x.dtype), (dyf * xf * rstd).sum(0).to(w.dtype)


PEER_FNS["rms_bwd"] = _rms_bwd_formula


def rms_norm_backward_cases(
    device: str,
    specs: tuple[tuple[str, int], ...] = (("bf16", 4096), ("bf16", 8192), ("fp32", 4096)),
    elements: int = 2**26,
) -> list[Case]:
    mod = load("rms_norm_backward")
    out = []
    for dtype, n in specs:
        dt = DT[dtype]
        m = elements // n
        out.append(
            Case(
                "rms_norm_backward",
                dtype,
                (m, n),
                lambda m=m, n=n, dt=dt: (
                    _r((m, n), dt, device),
                    _r((n,), dt, device) + 1.0,
                    _r((m, n), dt, device),
                ),
                lambda x, w, dy: mod.rms_norm_backward(x, w, dy, 1e-6),
                {
                    "torch": _rms_bwd_formula,
                    "torch.compile": lambda x, w, dy: compiled("rms_bwd")(x, w, dy),
                },
                mod.bytes_moved(m, n, dt.itemsize),
                mod.flops(m, n),
                "memory",
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
            lambda: _mm_inputs(s, s, s, dt, device),
            lambda x, y, a: mod.matmul(*a, config={**base, "num_stages": x, "num_warps": y}),
            mod.bytes_moved(s, s, s, dt.itemsize),
            mod.flops(s, s, s),
            f"{str(dt)[6:]} {s}^3, TMA persistent {base['BM']}x{base['BN']}x{base['BK']}",
        )
    raise KeyError(name)
