"""The pointer-based path of ``matmul`` (matmul.py): tiles loaded through pointers for any strides, in grouped
order, with split-K, and the tile helpers both of matmul's paths share (``_grouped_pid``, ``_epilogue``).

* ``_matmul_kernel`` — with SPLIT_K > 1 each program multiplies one K-slice and writes fp32 partials;
  ``_splitk_reduce_kernel`` adds them and applies the epilogue. ``stagger`` rotates each program's K loop by
  its column index, so that the programs streaming B do not all read the same rows (the same DRAM pages) at
  the same moment. Used for skinny (decode) shapes, where M·N alone gives too few tiles to keep 132 SMs
  streaming B, and as the fallback for operands the TMA path cannot describe.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from ._common import interpreting


@triton.jit
def _grouped_pid(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """Map a linear tile id to (pid_m, pid_n), walking GROUP_M rows of tiles column by column."""
    per_group = GROUP_M * num_pid_n
    first_m = (tile_id // per_group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % per_group) % size_m
    pid_n = (tile_id % per_group) // size_m
    return pid_m, pid_n


@triton.jit
def _epilogue(acc, bias_ptr, rn, N, HAS_BIAS: tl.constexpr, GELU: tl.constexpr):
    """Bias add and exact (erf) GELU on the fp32 accumulator, before the single store."""
    if HAS_BIAS:
        acc = acc + tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    if GELU:
        acc = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    return acc


@triton.jit
def _matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    bias_ptr,
    ws_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    SPLIT_K: tl.constexpr,
    EVEN_K: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    GELU: tl.constexpr,
    UPCAST: tl.constexpr,
    STAGGER: tl.constexpr,
):
    pid_m, pid_n = _grouped_pid(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
    pid_k = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = pid_k * BK + tl.arange(0, BK)
    # wrap out-of-range rows/columns instead of masking them: loads stay unmasked, stores are masked
    a_base = a_ptr + (rm % M).to(tl.int64)[:, None] * stride_am + rk[None, :] * stride_ak
    b_base = b_ptr + rk[:, None] * stride_bk + (rn % N)[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    num_k = tl.cdiv(K, BK * SPLIT_K)
    for k in range(0, num_k):
        if STAGGER:  # start each column of programs at a different K row: spreads DRAM traffic over channels
            kk = (k + pid_n) % num_k
        else:
            kk = k
        a_ptrs = a_base + kk * BK * SPLIT_K * stride_ak
        b_ptrs = b_base + (kk * BK * SPLIT_K).to(tl.int64) * stride_bk
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - kk * BK * SPLIT_K
            a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=rk[:, None] < k_left, other=0.0)
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc)
    mask = (rm < M)[:, None] & (rn < N)[None, :]
    if SPLIT_K == 1:
        acc = _epilogue(acc, bias_ptr, rn, N, HAS_BIAS, GELU)
        c_ptrs = c_ptr + rm.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)
    else:
        ws = ws_ptr + pid_k.to(tl.int64) * M * N + rm.to(tl.int64)[:, None] * N + rn[None, :]
        tl.store(ws, acc, mask=mask)


@triton.jit
def _splitk_reduce_kernel(
    ws_ptr,
    c_ptr,
    bias_ptr,
    M,
    N,
    stride_cm,
    stride_cn,
    SPLIT_K: tl.constexpr,
    BLOCK: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    GELU: tl.constexpr,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(ws_ptr + s * M * N + offs, mask=mask, other=0.0)
    m = offs // N
    n = offs % N
    acc2 = _epilogue(acc[None, :], bias_ptr, n, N, HAS_BIAS, GELU)
    tl.store(
        c_ptr + m * stride_cm + n * stride_cn,
        tl.reshape(acc2, (BLOCK,)).to(c_ptr.dtype.element_ty),
        mask=mask,
    )


def _launch_ptr(a, b, c, bias, cfg: dict[str, Any]) -> None:
    M, K = a.shape
    N = b.shape[1]
    BM, BN, BK = int(cfg["BM"]), int(cfg["BN"]), int(cfg["BK"])
    split_k = int(cfg.get("SPLIT_K", 1))
    gelu = bool(cfg.get("gelu", False))
    ws = torch.empty((split_k, M, N), device=a.device, dtype=torch.float32) if split_k > 1 else c
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN), split_k)
    _matmul_kernel[grid](
        a,
        b,
        c,
        bias if bias is not None else c,
        ws,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BM=BM,
        BN=BN,
        BK=BK,
        GROUP_M=int(cfg.get("GROUP_M", 1)),
        SPLIT_K=split_k,
        EVEN_K=K % (BK * split_k) == 0,
        HAS_BIAS=(bias is not None and split_k == 1),
        GELU=(gelu and split_k == 1),
        UPCAST=interpreting(),
        STAGGER=bool(cfg.get("stagger", False)),
        num_warps=int(cfg["num_warps"]),
        num_stages=int(cfg["num_stages"]),
    )
    if split_k > 1:
        block = 1024
        _splitk_reduce_kernel[(triton.cdiv(M * N, block),)](
            ws,
            c,
            bias if bias is not None else c,
            M,
            N,
            c.stride(0),
            c.stride(1),
            SPLIT_K=split_k,
            BLOCK=block,
            HAS_BIAS=bias is not None,
            GELU=gelu,
            num_warps=4,
        )
