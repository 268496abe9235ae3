"""Wrong: the causal mask is applied in the dQ kernel only; the dK/dV kernel lets every query see every key."""

import math

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def bwd_delta_kernel(
    o_ptr,
    do_ptr,
    delta_ptr,
    H,
    S,
    sob,
    soh,
    sos,
    sod,
    sgb,
    sgh,
    sgs,
    sgd,
    HEAD_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
):
    # reads O and dO once (2·S·D elements per head), writes S fp32
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    ok = offs_m < S
    o = tl.load(
        o_ptr + b * sob + h * soh + offs_m[:, None] * sos + offs_d[None, :] * sod, mask=ok[:, None], other=0.0
    ).to(tl.float32)
    do = tl.load(
        do_ptr + b * sgb + h * sgh + offs_m[:, None] * sgs + offs_d[None, :] * sgd,
        mask=ok[:, None],
        other=0.0,
    ).to(tl.float32)
    tl.store(delta_ptr + bh.to(tl.int64) * S + offs_m, tl.sum(o * do, axis=1), mask=ok)


@triton.jit
def bwd_dkdv_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    do_ptr,
    lse_ptr,
    delta_ptr,
    dk_ptr,
    dv_ptr,
    H,
    S,
    sm_scale,
    sqb,
    sqh,
    sqs,
    sqd,
    skb,
    skh,
    sks,
    skd,
    svb,
    svh,
    svs,
    svd,
    sgb,
    sgh,
    sgs,
    sgd,
    slb,
    slh,
    sls,
    HEAD_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_n = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_D)
    n_ok = offs_n < S
    k = tl.load(
        k_ptr + b * skb + h * skh + offs_n[:, None] * sks + offs_d[None, :] * skd,
        mask=n_ok[:, None],
        other=0.0,
    )
    v = tl.load(
        v_ptr + b * svb + h * svh + offs_n[:, None] * svs + offs_d[None, :] * svd,
        mask=n_ok[:, None],
        other=0.0,
    )
    dk = tl.zeros([BLOCK_N, HEAD_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_D], dtype=tl.float32)
    q_base = q_ptr + b * sqb + h * sqh
    do_base = do_ptr + b * sgb + h * sgh
    lo = 0
    for start_m in range(lo, S, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        m_ok = offs_m < S
        q = tl.load(q_base + offs_m[:, None] * sqs + offs_d[None, :] * sqd, mask=m_ok[:, None], other=0.0)
        do = tl.load(do_base + offs_m[:, None] * sgs + offs_d[None, :] * sgd, mask=m_ok[:, None], other=0.0)
        lse = tl.load(lse_ptr + b * slb + h * slh + offs_m * sls, mask=m_ok, other=0.0)
        delta = tl.load(delta_ptr + bh.to(tl.int64) * S + offs_m, mask=m_ok, other=0.0)
        s_t = tl.dot(k, tl.trans(q)) * sm_scale  # (BLOCK_N, BLOCK_M): scores, transposed
        keep = m_ok[None, :]
        p_t = tl.where(keep, tl.exp(s_t - lse[None, :]), 0.0)
        dv += tl.dot(p_t.to(do.dtype), do)
        dp_t = tl.dot(v, tl.trans(do))
        ds_t = p_t * (dp_t - delta[None, :])
        dk += tl.dot(ds_t.to(q.dtype), q)
    dk = dk * sm_scale
    tl.store(
        dk_ptr + bh.to(tl.int64) * S * HEAD_D + offs_n[:, None] * HEAD_D + offs_d[None, :],
        dk.to(dk_ptr.dtype.element_ty),
        mask=n_ok[:, None],
    )
    tl.store(
        dv_ptr + bh.to(tl.int64) * S * HEAD_D + offs_n[:, None] * HEAD_D + offs_d[None, :],
        dv.to(dv_ptr.dtype.element_ty),
        mask=n_ok[:, None],
    )


@triton.jit
def bwd_dq_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    do_ptr,
    lse_ptr,
    delta_ptr,
    dq_ptr,
    H,
    S,
    sm_scale,
    sqb,
    sqh,
    sqs,
    sqd,
    skb,
    skh,
    sks,
    skd,
    svb,
    svh,
    svs,
    svd,
    sgb,
    sgh,
    sgs,
    sgd,
    slb,
    slh,
    sls,
    HEAD_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    m_ok = offs_m < S
    q = tl.load(
        q_ptr + b * sqb + h * sqh + offs_m[:, None] * sqs + offs_d[None, :] * sqd,
        mask=m_ok[:, None],
        other=0.0,
    )
    do = tl.load(
        do_ptr + b * sgb + h * sgh + offs_m[:, None] * sgs + offs_d[None, :] * sgd,
        mask=m_ok[:, None],
        other=0.0,
    )
    lse = tl.load(lse_ptr + b * slb + h * slh + offs_m * sls, mask=m_ok, other=0.0)
    delta = tl.load(delta_ptr + bh.to(tl.int64) * S + offs_m, mask=m_ok, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    k_base = k_ptr + b * skb + h * skh
    v_base = v_ptr + b * svb + h * svh
    hi = tl.minimum((start_m + 1) * BLOCK_M, S)  # causal: later keys are hidden from the block
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        n_ok = offs_n < S
        k = tl.load(k_base + offs_n[:, None] * sks + offs_d[None, :] * skd, mask=n_ok[:, None], other=0.0)
        v = tl.load(v_base + offs_n[:, None] * svs + offs_d[None, :] * svd, mask=n_ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = n_ok[None, :] & (offs_m[:, None] >= offs_n[None, :])
        p = tl.where(keep, tl.exp(s - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k)
    dq = dq * sm_scale
    tl.store(
        dq_ptr + bh.to(tl.int64) * S * HEAD_D + offs_m[:, None] * HEAD_D + offs_d[None, :],
        dq.to(dq_ptr.dtype.element_ty),
        mask=m_ok[:, None],
    )


def attention_backward(q, k, v, o, lse, do, sm_scale=None):
    B, H, S, D = q.shape
    for name, t in (("k", k), ("v", v), ("o", o), ("do", do)):
        if t.shape != q.shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}, q has {tuple(q.shape)}")
    if lse.shape != (B, H, S) or D not in (16, 32, 64, 128):
        raise ValueError(f"lse must be (B, H, S) = {(B, H, S)} and D one of 16, 32, 64, 128")
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    dq = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    dk = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    dv = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    if S == 0 or B * H == 0:
        return dq, dk, dv
    delta = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
    BLOCK_M, BLOCK_N = (64, 64) if q.is_cuda else (32, 32)
    warps = 8 if q.is_cuda and D == 128 else 4
    bwd_delta_kernel[(triton.cdiv(S, BLOCK_M), B * H)](
        o, do, delta, H, S, *o.stride(), *do.stride(), HEAD_D=D, BLOCK_M=BLOCK_M
    )
    strides = (*q.stride(), *k.stride(), *v.stride(), *do.stride(), *lse.stride())
    bwd_dkdv_kernel[(triton.cdiv(S, BLOCK_N), B * H)](
        q,
        k,
        v,
        do,
        lse,
        delta,
        dk,
        dv,
        H,
        S,
        sm_scale,
        *strides,
        HEAD_D=D,
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        num_warps=warps,
    )
    bwd_dq_kernel[(triton.cdiv(S, BLOCK_M), B * H)](
        q,
        k,
        v,
        do,
        lse,
        delta,
        dq,
        H,
        S,
        sm_scale,
        *strides,
        HEAD_D=D,
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        num_warps=warps,
    )
    return dq, dk, dv
