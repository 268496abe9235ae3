"""Benchmark cases of the compute-bound reference kernels added for issues 38 and 39: attention forward and
backward against every SDPA backend, the persistent TMA GEMM and the block-scaled fp8 GEMM.

Every peer that can compute the same function is in the row (``perf/targets.py`` judges against the fastest
of them): for attention each SDPA backend on its own (``sdpa.py``; one that cannot run is recorded as an
error, "unavailable"), the default call (with the backend it picked) and ``torch.compile``; for the GEMMs
cuBLAS (``torch.matmul``) and ``torch.compile``; for fp8 ``torch._scaled_mm`` with the same block scales and
with the coarser row-wise and tensor-wise scales (faster where cuBLAS has no block-scaled kernel: a stricter
peer, never a looser one) and ``torch.compile`` of the dequantize-then-multiply formula. These rows use the
hidden-launch timer (``bench.time_hidden_launch``): GPU time only, whatever each peer's host path costs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from . import load
from .case_base import DT, PEER_FNS, Case, compiled, rand

#: Issue 38's table: B·H·S·D, bf16, each causal and full.
ATTENTION_SHAPES: tuple[tuple[int, int, int, int], ...] = (
    (4, 32, 4096, 128),
    (2, 32, 8192, 128),
    (1, 32, 16384, 128),
    (4, 32, 4096, 64),
)
#: The GEMM shapes of ``matmul`` (M, N, K), the decode shape included.
GEMM_SHAPES: tuple[tuple[int, int, int], ...] = (
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (4096, 11008, 4096),
    (16, 4096, 4096),
)

#: GPU cycles of the spin before each timed backward call (~0.5 ms at 1.98 GHz): an autograd backward's host
#: path is longer than the default spin of ``bench.time_hidden_launch``.
BACKWARD_SPIN = 1_000_000

PEER_FNS["sdpa"] = lambda q, k, v, causal: torch.nn.functional.scaled_dot_product_attention(
    q, k, v, is_causal=causal
)
PEER_FNS["mm"] = torch.matmul


def _attention_peers(causal: bool) -> dict[str, Callable[..., Any]]:
    from .sdpa import PEER_NAMES, forward_peer

    peers: dict[str, Callable[..., Any]] = {name: forward_peer(name, causal) for name in PEER_NAMES}
    peers["torch.compile"] = lambda q, k, v: compiled("sdpa")(q, k, v, causal)
    return peers


def attention_cases(
    device: str,
    shapes: tuple[tuple[int, int, int, int], ...] = ATTENTION_SHAPES,
    dtypes: tuple[str, ...] = ("bf16",),
    causal: tuple[bool, ...] = (False, True),
) -> list[Case]:
    mod = load("attention")
    out = []
    for dtype in dtypes:
        dt = DT[dtype]
        for shape in shapes:
            b, h, s, d = shape
            for c in causal:
                out.append(
                    Case(
                        "attention",
                        dtype,
                        shape,
                        lambda dt=dt, shape=shape: tuple(rand(shape, dt, device) for _ in range(3)),
                        Ours(lambda q, k, v, c=c: mod.attention(q, k, v, c), _attention_kernel),
                        _attention_peers(c),
                        mod.bytes_moved(b, h, s, d, dt.itemsize),
                        mod.flops(b, h, s, d, c),
                        "compute",
                        {"causal": c, "hide_launch": True},
                    )
                )
    return out


class Ours:
    """Our reference kernel as a bench row's "triton" entry, with ``describe`` naming the kernel that ran for the
    row's inputs (a function of them: the Gluon form where it applies, the Triton kernel otherwise)."""

    def __init__(self, fn: Callable[..., Any], which: Callable[..., str]) -> None:
        self.fn, self.which = fn, which

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)

    def describe(self, *args: Any) -> dict[str, Any]:
        return {"kernel": self.which(*args)}


def _attention_kernel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> str:
    return "gluon-ws" if load("attention").takes_gluon(q, k, v) else "triton"


def _fp8_kernel(a: torch.Tensor, sa: torch.Tensor, w: torch.Tensor, sw: torch.Tensor) -> str:
    return "gluon-ws" if load("matmul_fp8").takes_gluon(a, w) else "triton"


def _backward_kernel(q, k, v, o, lse, do) -> str:  # noqa: ANN001
    return "gluon-ws" if load("attention_backward").takes_gluon(q, k, v, do, lse) else "triton"


def _backward_inputs(shape: tuple[int, int, int, int], dt: torch.dtype, device: str, causal: bool) -> tuple:
    """q, k, v, o, lse (our forward's), do: what the backward takes."""
    q, k, v, do = (rand(shape, dt, device) for _ in range(4))
    o, lse = load("attention").attention(q, k, v, causal)
    return q, k, v, o, lse, do


def _backward_peers(causal: bool) -> dict[str, Callable[..., Any]]:
    from .sdpa import PEER_NAMES, BackwardPeer

    peers: dict[str, Callable[..., Any]] = {name: BackwardPeer(name, causal) for name in PEER_NAMES}
    peers["torch.compile"] = BackwardPeer(
        "torch.compile", causal, forward=lambda q, k, v: compiled("sdpa")(q, k, v, causal)
    )
    return peers


def attention_backward_cases(
    device: str,
    shapes: tuple[tuple[int, int, int, int], ...] = ATTENTION_SHAPES,
    dtypes: tuple[str, ...] = ("bf16",),
    causal: tuple[bool, ...] = (False, True),
) -> list[Case]:
    mod = load("attention_backward")
    out = []
    for dtype in dtypes:
        dt = DT[dtype]
        for shape in shapes:
            b, h, s, d = shape
            for c in causal:
                out.append(
                    Case(
                        "attention_backward",
                        dtype,
                        shape,
                        lambda dt=dt, shape=shape, c=c: _backward_inputs(shape, dt, device, c),
                        Ours(
                            lambda q, k, v, o, lse, do, c=c: mod.attention_backward(q, k, v, o, lse, do, c),
                            _backward_kernel,
                        ),
                        _backward_peers(c),
                        mod.bytes_moved(b, h, s, d, dt.itemsize),
                        mod.flops(b, h, s, d, c),
                        "compute",
                        {"causal": c, "hide_launch": True, "spin_cycles": BACKWARD_SPIN},
                    )
                )
    return out


def matmul_tma_cases(
    device: str,
    shapes: tuple[tuple[int, int, int], ...] = GEMM_SHAPES,
    dtypes: tuple[str, ...] = ("bf16",),
) -> list[Case]:
    mod = load("matmul_tma")
    out = []
    for dtype in dtypes:
        dt = DT[dtype]
        for m, n, k in shapes:
            out.append(
                Case(
                    "matmul_tma",
                    dtype,
                    (m, n, k),
                    lambda m=m, n=n, k=k, dt=dt: (
                        rand((m, k), dt, device),
                        rand((k, n), dt, device, k**-0.5),
                    ),
                    mod.matmul_tma,
                    {"cuBLAS": torch.matmul, "torch.compile": lambda a, b: compiled("mm")(a, b)},
                    mod.bytes_moved(m, n, k, dt.itemsize),
                    mod.flops(m, n, k),
                    "memory" if m <= 64 else "compute",
                    {"hide_launch": True},
                )
            )
    return out


def fp8_inputs(m: int, n: int, k: int, device: str) -> tuple[torch.Tensor, ...]:
    """(a, a_scale, w, w_scale): fp8 e4m3 operands quantized from fresh normal data, block scales as
    ``matmul_fp8`` takes them (a per row and 128 columns of K, w per 128×128 block)."""
    mod = load("matmul_fp8")
    a, sa = mod.quantize(torch.randn((m, k), device=device), 1)
    w, sw = mod.quantize(torch.randn((n, k), device=device) * k**-0.5, 128)
    return a, sa, w, sw


def _dequantized_mm(a, sa, w, sw):  # noqa: ANN001, ANN202 - torch.compile's input: the formula, written plainly
    sa_full = sa.repeat_interleave(128, 1)[:, : a.shape[1]]
    sw_full = sw.repeat_interleave(128, 0).repeat_interleave(128, 1)[: w.shape[0], : w.shape[1]]
    return ((a.float() * sa_full) @ (w.float() * sw_full).t()).to(torch.bfloat16)


PEER_FNS["fp8_dequantized_mm"] = _dequantized_mm


class ScaledMM:
    """``torch._scaled_mm`` on the case's fp8 operands with ``scaling`` "blockwise" (the same 1×128 / 128×128
    scales), "rowwise" (one scale per row of a and per column of the product) or "tensorwise" (one each).

    For block scales, the first call tries the scale layouts this torch may ask for (as given, then the
    M-major / column-major copies) and keeps the one that runs; ``describe`` names it. Where none runs, the
    call raises and the bench row records the peer as unavailable."""

    LAYOUTS = ("as given", "outer-dim-major a_scale", "outer-dim-major both")

    def __init__(self, scaling: str) -> None:
        self.scaling = scaling
        self.layout: str | None = None

    def _scales(self, sa: torch.Tensor, sw: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
        if self.scaling == "tensorwise":
            return sa.new_ones(()), sw.new_ones(())
        sb = sw.t()  # (K/128, N/128) for mat2 = wᵀ
        if layout == "as given":
            return sa, sb.contiguous()
        if layout == "outer-dim-major a_scale":
            return sa.t().contiguous().t(), sb.contiguous()
        return sa.t().contiguous().t(), sw.contiguous().t()

    def __call__(self, a, sa, w, sw):  # noqa: ANN001, ANN204
        n = w.shape[0]
        if self.scaling == "rowwise":
            sa_, sb_ = sa[:, :1].contiguous(), sw.new_ones((1, n))
            return torch._scaled_mm(a, w.t(), scale_a=sa_, scale_b=sb_, out_dtype=torch.bfloat16)
        layouts = (
            [self.layout] if self.layout else list(self.LAYOUTS[: 1 if self.scaling == "tensorwise" else 3])
        )
        error: Exception | None = None
        for layout in layouts:
            sa_, sb_ = self._scales(sa, sw, layout)
            try:
                out = torch._scaled_mm(a, w.t(), scale_a=sa_, scale_b=sb_, out_dtype=torch.bfloat16)
            except (RuntimeError, ValueError) as exc:  # this layout is not one this torch takes
                error = exc
                continue
            self.layout = layout
            return out
        raise RuntimeError(f"torch._scaled_mm ({self.scaling}) runs with none of {layouts}: {error}")

    def describe(self, a, sa, w, sw) -> dict[str, Any]:  # noqa: ANN001
        return {"scale_layout": self.layout} if self.scaling == "blockwise" and self.layout else {}


def matmul_fp8_cases(device: str, shapes: tuple[tuple[int, int, int], ...] = GEMM_SHAPES) -> list[Case]:
    mod = load("matmul_fp8")
    out = []
    for m, n, k in shapes:
        out.append(
            Case(
                "matmul_fp8",
                "fp8e4m3",
                (m, n, k),
                lambda m=m, n=n, k=k: fp8_inputs(m, n, k, device),
                Ours(mod.matmul_fp8, _fp8_kernel),
                {
                    "scaled_mm blockwise": ScaledMM("blockwise"),
                    "scaled_mm rowwise": ScaledMM("rowwise"),
                    "scaled_mm tensorwise": ScaledMM("tensorwise"),
                    "torch.compile": lambda a, sa, w, sw: compiled("fp8_dequantized_mm")(a, sa, w, sw),
                },
                mod.bytes_moved(m, n, k),
                mod.flops(m, n, k),
                "memory" if m <= 64 else "compute",
                {"hide_launch": True},
            )
        )
    return out
