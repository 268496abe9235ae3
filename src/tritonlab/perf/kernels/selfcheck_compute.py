"""Float64 checks of the compute-bound reference kernels: attention forward and backward, the persistent TMA GEMM
and the block-scaled fp8 GEMM (used by ``selfcheck.check``; same protocol: fresh random inputs, outputs
compared by ‖out − ref‖ / ‖ref‖).

Attention references are S×S in float64; at the benchmarked sizes (4·32·4096² scores and more) that would need
tens of GB, so past :data:`FULL_REFERENCE_SCORES` scores the kernel runs on the whole input and the reference
is computed for the first two heads of the first batch only (their outputs are compared). The fp8 reference is
the float64 product of the *dequantized* fp8 operands: it checks the kernel's arithmetic (indexing, block
scales, promotion into fp32), not the quantization, whose error belongs to the format.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from . import load

#: Above this many float64 scores (B·H·S²) the attention reference covers heads (0, 0) and (0, 1) only.
FULL_REFERENCE_SCORES = 2**27


def _randn(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, scale: float = 1.0
) -> torch.Tensor:
    return (torch.randn(shape, device=device, dtype=torch.float32) * scale).to(dtype)


def _heads(b: int, h: int, s: int) -> tuple[slice, slice]:
    """The (batch, head) slices the float64 reference covers."""
    if b * h * s * s <= FULL_REFERENCE_SCORES:
        return slice(None), slice(None)
    return slice(0, 1), slice(0, min(h, 2))


def _split(config: dict | None) -> tuple[bool, dict | None]:
    causal = bool((config or {}).get("causal"))
    cfg = {k: v for k, v in (config or {}).items() if k != "causal"} or None
    return causal, cfg


def _scores(q: torch.Tensor, k: torch.Tensor, causal: bool) -> torch.Tensor:
    s = q.shape[-2]
    sc = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        sc = sc.masked_fill(torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return sc


def attention_pair(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, config: dict | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(ours, reference) for the forward: o and lse/100 (so lse weighs about as much as o), flattened."""
    b, h, s, d = shape
    causal, cfg = _split(config)
    q, k, v = (_randn((b, h, s, d), dtype, device) for _ in range(3))
    o, lse = load("attention").attention(q, k, v, causal, config=cfg)
    bs, hs = _heads(b, h, s)
    sc = _scores(q[bs, hs], k[bs, hs], causal)
    out = torch.cat([o[bs, hs].double().flatten(), lse[bs, hs].double().flatten() / 100])
    ref = torch.cat(
        [(torch.softmax(sc, -1) @ v[bs, hs].double()).flatten(), torch.logsumexp(sc, -1).flatten() / 100]
    )
    return out, ref


def attention_backward_pair(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, config: dict | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(ours, reference) for the backward: dq, dk, dv flattened, against float64 autograd of plain attention.
    The forward's o and lse come from the reference forward kernel (what the backward is given in use)."""
    from .sdpa import reference_grads

    b, h, s, d = shape
    causal, cfg = _split(config)
    q, k, v, do = (_randn((b, h, s, d), dtype, device) for _ in range(4))
    o, lse = load("attention").attention(q, k, v, causal)
    dq, dk, dv = load("attention_backward").attention_backward(q, k, v, o, lse, do, causal, config=cfg)
    bs, hs = _heads(b, h, s)
    _o, rdq, rdk, rdv = reference_grads(q[bs, hs], k[bs, hs], v[bs, hs], do[bs, hs], causal, 1 / math.sqrt(d))
    out = torch.cat([t[bs, hs].double().flatten() for t in (dq, dk, dv)])
    return out, torch.cat([t.flatten() for t in (rdq, rdk, rdv)])


def matmul_tma_pair(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, config: dict | None
) -> tuple[torch.Tensor, torch.Tensor]:
    m, n, k = shape
    a = _randn((m, k), dtype, device)
    b = _randn((k, n), dtype, device, 1 / math.sqrt(k))
    out = torch.full((m, n), float("nan"), dtype=dtype, device=device)
    load("matmul_tma").matmul_tma(a, b, out=out, config=config)
    return out, a.double() @ b.double()


def matmul_fp8_pair(
    shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, config: dict | None
) -> tuple[torch.Tensor, torch.Tensor]:
    mod = load("matmul_fp8")
    m, n, k = shape
    a, sa = mod.quantize(torch.randn((m, k), device=device), 1)
    w, sw = mod.quantize(torch.randn((n, k), device=device) / math.sqrt(k), 128)
    out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=device)
    mod.matmul_fp8(a, sa, w, sw, out=out, config=config)
    return out, mod.dequantize(a, sa, 1) @ mod.dequantize(w, sw, 128).t()


PAIRS: dict[str, Any] = {
    "attention": attention_pair,
    "attention_backward": attention_backward_pair,
    "matmul_tma": matmul_tma_pair,
    "matmul_fp8": matmul_fp8_pair,
}

_TMA_SMALL = {"kernel": "tma", "BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 4, "num_stages": 1}
_BWD_SMALL = {"BLOCK_M1": 16, "BLOCK_N1": 32, "BLOCK_M2": 32, "BLOCK_N2": 16, "num_warps": 4, "num_stages": 1}
_MM_SMALL = {"BM": 32, "BN": 32, "BK": 32, "GROUP_M": 2, "num_warps": 4, "num_stages": 1, "EPI_SPLIT": 2}

#: Small interpreter cases: odd sizes (masks and tails), causal and full, each launch option once.
SMALL_CASES: list[tuple[str, tuple[int, ...], torch.dtype, dict | None]] = [
    ("attention", (1, 2, 77, 64), torch.float16, {"causal": True}),
    ("attention", (2, 1, 50, 128), torch.float16, None),
    ("attention", (1, 1, 96, 64), torch.float16,
     {"causal": True, "BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 4, "num_stages": 1}),
    ("attention", (1, 2, 77, 32), torch.float16, {"causal": True, **_TMA_SMALL, "pipe": True, "reverse": True}),
    ("attention", (2, 1, 70, 64), torch.float16, {**_TMA_SMALL, "pipe": True}),
    ("attention", (1, 1, 64, 32), torch.float16, {**_TMA_SMALL, "ws": True}),
    ("attention", (2, 2, 77, 32), torch.float16, {"causal": True, **_TMA_SMALL, "lpt": True}),
    ("attention_backward", (1, 2, 64, 32), torch.float16, None),
    ("attention_backward", (2, 1, 77, 64), torch.float16, {"causal": True}),
    ("attention_backward", (1, 2, 77, 32), torch.float16, {"causal": True, **_BWD_SMALL, "atomic_dq": True}),
    # on the interpreter tma_dq adds element by element (no TMA reduction there): the launch's plumbing
    ("attention_backward", (2, 2, 45, 32), torch.float16, {**_BWD_SMALL, "atomic_dq": True, "tma_dq": True}),
    ("attention_backward", (1, 1, 50, 32), torch.float16, {**_BWD_SMALL, "fused": True}),
    # the Gluon kernels asked for where they cannot run (here: no GPU): the default Triton launch
    ("attention_backward", (1, 2, 64, 32), torch.float16, {"causal": True, "GLUON": True}),
    ("matmul_tma", (100, 96, 80), torch.float16, None),
    ("matmul_tma", (16, 64, 200), torch.bfloat16, {**_MM_SMALL, "BM": 16, "EPI_SPLIT": 1}),
    ("matmul_tma", (64, 128, 64), torch.bfloat16, {**_MM_SMALL, "flatten": True}),
    ("matmul_fp8", (100, 96, 208), torch.float8_e4m3fn, None),
    ("matmul_fp8", (16, 256, 384), torch.float8_e4m3fn, {"GLUON": True}),
    ("matmul_fp8", (16, 256, 384), torch.float8_e4m3fn,
     {"BM": 16, "BN": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": 1}),
    # a tile as wide as a weight scale block, three blocks along N (the last one partial): one scale per tile;
    # two programs per SM (the grid's stride is the grid)
    ("matmul_fp8", (33, 296, 272), torch.float8_e4m3fn,
     {"BM": 16, "BN": 128, "GROUP_M": 2, "num_warps": 4, "num_stages": 1, "PER_SM": 2}),
    # a tile two weight blocks wide: a scale per column (the promotion's other form)
    ("matmul_fp8", (20, 296, 272), torch.float8_e4m3fn,
     {"BM": 16, "BN": 256, "GROUP_M": 1, "num_warps": 4, "num_stages": 1}),
]  # fmt: skip
