"""Vector add ``out = x + y`` — the memory-bound baseline.

Cost model (n elements of s bytes): reads 2·n·s bytes, writes n·s bytes, does n FLOPs, so the arithmetic
intensity is 1/(3·s) FLOP/byte (1/12 for fp32): far left of every ridge point, purely bandwidth-bound. The
floor is ``3·n·s / copy_bandwidth``; on an H200 (about 4.3 TB/s) 2^28 fp32 elements take at least 0.75 ms.

Design: one program per BLOCK_SIZE elements, 16-byte vector loads (BLOCK_SIZE / (32·num_warps) ≥ 4 fp32 per
thread), the bounds mask compiled away when n is a multiple of BLOCK_SIZE (``EVEN``), 64-bit offsets only when
n ≥ 2^31. Cache hints are options (``stream=True`` marks loads ``evict_first``; ``load_cache``/
``store_cache`` take PTX cache modifiers such as ".cg" and ".cs"): on an H200 ``evict_first`` loads cost
about 10% (docs/gpu-runs/2026-11-29-h200-39df766/h200-tuning-pass1.json), so the default issues plain loads.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import interpreting, num_sms

#: Default launch configuration, from the block sweep of H200 run 2026-11-29 (39df766) (`h200-block-sweep.json`).
BLOCK_SIZE = 2048
NUM_WARPS = 8
PERSISTENT = 0  # programs per SM for the grid-stride variant; 0 = one program per block
STAGES = 1


@triton.jit
def _vector_add_kernel(
    x_ptr,
    y_ptr,
    out_ptr,
    n,
    BLOCK_SIZE: tl.constexpr,
    EVEN: tl.constexpr,
    INT64: tl.constexpr,
    POLICY: tl.constexpr,
    LOAD_CACHE: tl.constexpr,
    STORE_CACHE: tl.constexpr,
):
    pid = tl.program_id(0)
    if INT64:
        start = pid.to(tl.int64) * BLOCK_SIZE
    else:
        start = pid * BLOCK_SIZE
    offs = start + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        x = tl.load(x_ptr + offs, eviction_policy=POLICY, cache_modifier=LOAD_CACHE)
        y = tl.load(y_ptr + offs, eviction_policy=POLICY, cache_modifier=LOAD_CACHE)
        tl.store(
            out_ptr + offs, (x.to(tl.float32) + y.to(tl.float32)).to(x.dtype), cache_modifier=STORE_CACHE
        )
    else:
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, eviction_policy=POLICY, cache_modifier=LOAD_CACHE)
        y = tl.load(y_ptr + offs, mask=mask, eviction_policy=POLICY, cache_modifier=LOAD_CACHE)
        tl.store(
            out_ptr + offs,
            (x.to(tl.float32) + y.to(tl.float32)).to(x.dtype),
            mask=mask,
            cache_modifier=STORE_CACHE,
        )


@triton.jit
def _vector_add_persistent_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr, STAGES: tl.constexpr):
    # grid-stride loop over whole blocks (n % BLOCK_SIZE == 0): a few programs per SM, next block prefetched
    for blk in tl.range(tl.program_id(0), n // BLOCK_SIZE, tl.num_programs(0), num_stages=STAGES):
        offs = blk.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + offs).to(tl.float32)
        y = tl.load(y_ptr + offs).to(tl.float32)
        tl.store(out_ptr + offs, (x + y).to(out_ptr.dtype.element_ty))


def vector_add(
    x: torch.Tensor,
    y: torch.Tensor,
    out: torch.Tensor | None = None,
    *,
    block_size: int | None = None,
    num_warps: int | None = None,
    stream: bool = False,
    load_cache: str = "",
    store_cache: str = "",
    persistent: int | None = None,
    stages: int | None = None,
) -> torch.Tensor:
    """Return ``x + y`` for contiguous tensors of equal shape and dtype (written into ``out`` if given).

    ``persistent=k`` launches k programs per SM that loop over the blocks (``stages`` deep prefetch).
    """
    if x.shape != y.shape or x.dtype != y.dtype:
        raise ValueError(f"shape/dtype mismatch: {tuple(x.shape)} {x.dtype} vs {tuple(y.shape)} {y.dtype}")
    if not (x.is_contiguous() and y.is_contiguous()):
        raise ValueError("vector_add needs contiguous inputs")
    if out is None:
        out = torch.empty_like(x)
    block_size = block_size or BLOCK_SIZE
    num_warps = num_warps or NUM_WARPS
    n = x.numel()
    if n == 0:
        return out
    persistent = PERSISTENT if persistent is None else persistent
    stages = STAGES if stages is None else stages
    if persistent and n % block_size == 0 and not interpreting():
        grid = (min(n // block_size, persistent * num_sms(x.device.index or 0)),)
        _vector_add_persistent_kernel[grid](
            x, y, out, n, BLOCK_SIZE=block_size, STAGES=stages, num_warps=num_warps
        )
        return out
    grid = (triton.cdiv(n, block_size),)
    _vector_add_kernel[grid](
        x,
        y,
        out,
        n,
        BLOCK_SIZE=block_size,
        EVEN=n % block_size == 0,
        INT64=n + block_size >= 2**31,
        POLICY="evict_first" if stream else "",
        LOAD_CACHE=load_cache,
        STORE_CACHE=store_cache,
        num_warps=num_warps,
    )
    return out


def bytes_moved(n: int, elem_size: int) -> int:
    """Bytes that must cross device memory: two reads and one write."""
    return 3 * n * elem_size


def flops(n: int) -> int:
    """One addition per element."""
    return n
