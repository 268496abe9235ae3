"""Correctness checks for the reference kernels against float64 references, on any device.

``python -m tritonlab.perf.kernels.selfcheck`` runs the small cases (the CPU test-suite runs it with
``TRITON_INTERPRET=1``); ``scripts/bench_gpu.py`` calls :func:`check` on the benchmarked shapes.
Relative error is ‖out − ref‖ / ‖ref‖ against a float64 reference on the same (fresh, random, non-zero)
inputs; outputs are poisoned with NaN before the kernel runs, so an unwritten element fails the check.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch

from . import load
from .selfcheck_compute import PAIRS
from .selfcheck_compute import SMALL_CASES as COMPUTE_SMALL_CASES

#: Largest accepted relative error per output dtype (bf16 rounding alone is ~2e-3 relative).
TOLERANCE: dict[torch.dtype, float] = {
    torch.float32: 1e-5,
    torch.float16: 2e-3,
    torch.bfloat16: 1e-2,
    torch.float8_e4m3fn: 1e-2,  # fp8 inputs, bf16 output: the result's rounding (checked against dequantized inputs)
}


@dataclass
class CheckResult:
    kernel: str
    shape: tuple[int, ...]
    dtype: str
    rel_err: float
    tol: float

    @property
    def ok(self) -> bool:
        return math.isfinite(self.rel_err) and self.rel_err <= self.tol


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ in float64; NaN or Inf anywhere in ``out`` gives inf."""
    o = out.double()
    if not torch.isfinite(o).all():
        return math.inf
    r = ref.double()
    return float((o - r).norm() / r.norm().clamp_min(1e-300))


def _poisoned(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def _randn(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, scale: float = 1.0
) -> torch.Tensor:
    x = torch.randn(shape, device=device, dtype=torch.float32) * scale
    return x.to(dtype)


def check(
    name: str,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    device: torch.device | str = "cpu",
    config: dict | None = None,
) -> CheckResult:
    """Run reference kernel ``name`` once on fresh random data of ``shape`` and compare with float64."""
    device = torch.device(device)
    mod = load(name)
    fn: Callable[..., torch.Tensor] = getattr(mod, name)
    kw = {"config": config} if config is not None else {}
    if name == "vector_add":
        (n,) = shape
        x, y = _randn((n,), dtype, device), _randn((n,), dtype, device)
        out = fn(x, y, _poisoned((n,), dtype, device))
        ref = x.double() + y.double()
    elif name == "copy_2d":
        m, n = shape
        wide = _randn((m, n + 3), dtype, device)
        x = wide[:, 1 : n + 1]
        out = fn(x, _poisoned((m, n), dtype, device))
        ref = x.double()
    elif name == "transpose":
        m, n = shape
        x = _randn((m, n), dtype, device)
        out = fn(x, _poisoned((n, m), dtype, device))
        ref = x.double().t()
    elif name == "softmax":
        m, n = shape
        x = _randn((m, n), dtype, device, scale=3.0)
        out = fn(x, _poisoned((m, n), dtype, device), **kw)
        ref = torch.softmax(x.double(), dim=-1)
    elif name == "rms_norm":
        m, n = shape
        x = _randn((m, n), dtype, device)
        w = _randn((n,), dtype, device) + 1.0
        out = fn(x, w, 1e-6, _poisoned((m, n), dtype, device), **kw)
        xd = x.double()
        ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
    elif name in ("matmul", "matmul_bias_gelu"):
        m, n, k = shape
        a = _randn((m, k), dtype, device)
        b = _randn((k, n), dtype, device) / math.sqrt(k)
        if name == "matmul":
            out = fn(a, b, out=_poisoned((m, n), dtype, device), **kw)
            ref = a.double() @ b.double()
        else:
            bias = _randn((n,), dtype, device)
            out = fn(a, b, bias, _poisoned((m, n), dtype, device), **kw)
            ref = torch.nn.functional.gelu(a.double() @ b.double() + bias.double())
    elif name == "rms_norm_backward":
        m, n = shape
        x = _randn((m, n), dtype, device)
        w = _randn((n,), dtype, device) + 1.0
        dy = _randn((m, n), dtype, device)
        atomic = bool((config or {}).get("atomic"))
        cfg = {k: v for k, v in (config or {}).items() if k != "atomic"} or None
        dx, dw = fn(x, w, dy, 1e-6, atomic=atomic, config=cfg)
        xd = x.double().requires_grad_()
        wd = w.double().requires_grad_()
        (xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * wd).backward(dy.double())
        out = torch.cat([dx.double().flatten(), dw.double()])
        ref = torch.cat([xd.grad.flatten(), wd.grad])
    elif name in PAIRS:
        out, ref = PAIRS[name](tuple(shape), dtype, device, config)
    elif name == "fused_linear_ce":
        bt, vocab, d = shape
        chunk = int((config or {}).get("chunk", 0)) or None
        hh = _randn((bt, d), dtype, device).requires_grad_()
        w = (_randn((vocab, d), dtype, device) / math.sqrt(d)).requires_grad_()
        target = torch.randint(0, vocab, (bt,), device=device)
        loss = fn(hh, w, target, chunk, over=(config or {}).get("over"))
        loss.backward()
        hd, wd = hh.detach().double().requires_grad_(), w.detach().double().requires_grad_()
        ref_loss = torch.nn.functional.cross_entropy(hd @ wd.t(), target)
        ref_loss.backward()
        out = torch.cat(
            [loss.detach().double().reshape(1), hh.grad.double().flatten(), w.grad.double().flatten()]
        )
        ref = torch.cat([ref_loss.detach().reshape(1), hd.grad.flatten(), wd.grad.flatten()])
    else:
        raise KeyError(name)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return CheckResult(
        name, tuple(shape), str(dtype).removeprefix("torch."), rel_err(out, ref), TOLERANCE[dtype]
    )


#: Small cases for the interpreter: odd sizes that exercise masks, every dtype each kernel supports.
SMALL_CASES: list[tuple[str, tuple[int, ...], torch.dtype, dict | None]] = [
    ("vector_add", (5000,), torch.float32, None),
    ("vector_add", (8192,), torch.bfloat16, None),
    ("copy_2d", (37, 300), torch.float32, None),
    ("copy_2d", (32, 512), torch.bfloat16, None),
    ("transpose", (70, 130), torch.float32, None),
    ("transpose", (64, 128), torch.bfloat16, None),
    ("softmax", (9, 1000), torch.float32, None),
    ("softmax", (3, 4096), torch.bfloat16, None),
    ("softmax", (5, 300), torch.float32, {"kind": "onepass", "rows": 2, "num_warps": 4, "stages": 2}),
    ("softmax", (3, 5000), torch.float32, {"kind": "online", "chunk": 1024, "num_warps": 4}),
    ("softmax", (2, 3000), torch.bfloat16, {"kind": "online", "chunk": 2048, "num_warps": 4}),
    ("rms_norm", (7, 1000), torch.float32, None),
    ("rms_norm", (4, 2048), torch.bfloat16, {"kind": "onepass", "rows": 2, "num_warps": 4, "stages": 2}),
    ("rms_norm", (3, 5000), torch.float32, {"kind": "looped", "chunk": 1024, "num_warps": 4}),
    (
        "matmul",
        (100, 96, 80),
        torch.float16,
        {"kernel": "ptr", "BM": 32, "BN": 32, "BK": 32, "GROUP_M": 2, "num_warps": 4, "num_stages": 2},
    ),
    (
        "matmul",
        (128, 128, 64),
        torch.bfloat16,
        {"kernel": "tma", "BM": 64, "BN": 64, "BK": 32, "GROUP_M": 2, "num_warps": 4, "num_stages": 2},
    ),
    (
        "matmul",
        (16, 64, 256),
        torch.bfloat16,
        {
            "kernel": "ptr",
            "BM": 16,
            "BN": 32,
            "BK": 32,
            "GROUP_M": 1,
            "SPLIT_K": 2,
            "num_warps": 4,
            "num_stages": 2,
        },
    ),
    (
        "matmul",
        (16, 96, 1000),
        torch.float16,
        {
            "kernel": "ptr",
            "BM": 16,
            "BN": 32,
            "BK": 128,
            "GROUP_M": 1,
            "SPLIT_K": 2,
            "num_warps": 4,
            "num_stages": 3,
            "stagger": True,
        },
    ),
    (
        "matmul_bias_gelu",
        (64, 96, 64),
        torch.bfloat16,
        {"kernel": "tma", "BM": 32, "BN": 32, "BK": 32, "GROUP_M": 2, "num_warps": 4, "num_stages": 2},
    ),
    (
        "matmul_bias_gelu",
        (16, 64, 96),
        torch.float16,
        {
            "kernel": "ptr",
            "BM": 16,
            "BN": 32,
            "BK": 32,
            "GROUP_M": 1,
            "SPLIT_K": 3,
            "num_warps": 4,
            "num_stages": 2,
        },
    ),
]


SMALL_CASES += [
    ("rms_norm_backward", (37, 300), torch.float32, None),
    ("rms_norm_backward", (50, 128), torch.bfloat16, {"programs": 3, "num_warps": 4}),
    ("rms_norm_backward", (29, 100), torch.float32, {"atomic": True}),
    ("rms_norm_backward", (37, 300), torch.float32, {"programs": 3, "num_warps": 4, "rows": 4}),
    (
        "rms_norm_backward",
        (41, 300),
        torch.float32,
        {"programs": 5, "num_warps": 4, "rows": 2, "prefetch": 1},
    ),
    (
        "rms_norm_backward",
        (41, 300),
        torch.bfloat16,
        {"programs": 5, "num_warps": 4, "rows": 2, "prefetch": 0},
    ),
    (
        "rms_norm_backward",
        (41, 96),
        torch.bfloat16,
        {"programs": 5, "num_warps": 2, "rows": 2, "atomic": True},
    ),
    ("fused_linear_ce", (37, 1000, 64), torch.float32, {"chunk": 256}),
    ("fused_linear_ce", (16, 700, 32), torch.float16, {"chunk": 300}),
    ("fused_linear_ce", (37, 1000, 64), torch.float32, {"chunk": 10, "over": "tokens"}),
    ("fused_linear_ce", (16, 700, 32), torch.float16, {"chunk": 7, "over": "tokens"}),
]
SMALL_CASES += COMPUTE_SMALL_CASES


def main(argv: list[str] | None = None) -> int:
    """Run the small cases (optionally only those whose kernel name is in argv); print one line each."""
    wanted = set(argv if argv is not None else sys.argv[1:])
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    failed = 0
    for name, shape, dtype, cfg in SMALL_CASES:
        if wanted and name not in wanted:
            continue
        r = check(name, shape, dtype, device, cfg)
        failed += not r.ok
        print(
            f"{'ok  ' if r.ok else 'FAIL'} {name:18s} {str(shape):18s} {r.dtype:9s} rel_err={r.rel_err:.2e}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
