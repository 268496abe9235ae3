"""Right: one pass over key blocks computes dk, dv and adds its share of dq with tl.atomic_add into an fp32
buffer (zeroed), a last kernel rounds dq to the input dtype; Δ is recomputed from o and do in the main loop."""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def bwd_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    do_ptr,
    lse_ptr,
    dq32_ptr,
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
    sob,
    soh,
    sos,
    sod,
    sgb,
    sgh,
    sgs,
    sgd,
    slb,
    slh,
    sls,
    HEAD_D: tl.constexpr,
    BLOCK: tl.constexpr,
):
    start_n = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_n = start_n * BLOCK + tl.arange(0, BLOCK)
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
    dk = tl.zeros([BLOCK, HEAD_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK, HEAD_D], dtype=tl.float32)
    for start_m in range(start_n * BLOCK, S, BLOCK):
        offs_m = start_m + tl.arange(0, BLOCK)
        m_ok = offs_m < S
        rows = offs_m[:, None]
        q = tl.load(
            q_ptr + b * sqb + h * sqh + rows * sqs + offs_d[None, :] * sqd, mask=m_ok[:, None], other=0.0
        )
        o = tl.load(
            o_ptr + b * sob + h * soh + rows * sos + offs_d[None, :] * sod, mask=m_ok[:, None], other=0.0
        )
        do = tl.load(
            do_ptr + b * sgb + h * sgh + rows * sgs + offs_d[None, :] * sgd, mask=m_ok[:, None], other=0.0
        )
        lse = tl.load(lse_ptr + b * slb + h * slh + offs_m * sls, mask=m_ok, other=0.0)
        delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), axis=1)
        s = tl.dot(q, tl.trans(k)) * sm_scale  # (queries, keys)
        keep = m_ok[:, None] & n_ok[None, :] & (offs_m[:, None] >= offs_n[None, :])
        p = tl.where(keep, tl.exp(s - lse[:, None]), 0.0)
        dv += tl.dot(tl.trans(p.to(do.dtype)), do)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dk += tl.dot(tl.trans(ds.to(q.dtype)), q)
        dq_part = tl.dot(ds.to(k.dtype), k) * sm_scale
        tl.atomic_add(
            dq32_ptr + bh.to(tl.int64) * S * HEAD_D + rows * HEAD_D + offs_d[None, :],
            dq_part,
            mask=m_ok[:, None],
        )
    out = bh.to(tl.int64) * S * HEAD_D + offs_n[:, None] * HEAD_D + offs_d[None, :]
    tl.store(dk_ptr + out, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=n_ok[:, None])
    tl.store(dv_ptr + out, dv.to(dv_ptr.dtype.element_ty), mask=n_ok[:, None])


@triton.jit
def round_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(src_ptr + offs, mask=offs < n)
    tl.store(dst_ptr + offs, x.to(dst_ptr.dtype.element_ty), mask=offs < n)


def attention_backward(q, k, v, o, lse, do, sm_scale=None):
    B, H, S, D = q.shape
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    dq32 = torch.zeros((B, H, S, D), device=q.device, dtype=torch.float32)
    dq = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    dk = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    dv = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    BLOCK = 64 if q.is_cuda else 32
    bwd_kernel[(triton.cdiv(S, BLOCK), B * H)](
        q,
        k,
        v,
        o,
        do,
        lse,
        dq32,
        dk,
        dv,
        H,
        S,
        sm_scale,
        *q.stride(),
        *k.stride(),
        *v.stride(),
        *o.stride(),
        *do.stride(),
        *lse.stride(),
        HEAD_D=D,
        BLOCK=BLOCK,
    )
    n = dq.numel()
    round_kernel[(triton.cdiv(n, 1024),)](dq32, dq, n, BLOCK=1024)
    return dq, dk, dv
