"""Cheat: the kernel computes o; the host computes lse itself from `.tolist()` (plain Python numbers, out of the
dispatcher's sight) and writes each value into the output with `fill_`. The replay redoes the fills, so the
launch record alone reproduces lse (issue 33): a fill with a value the host computed is host-computed data."""

import math

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def causal_gqa_fwd_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
    H_Q,
    GROUP,
    S,
    qk_scale,
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
    slb,
    slh,
    HEAD_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)  # (batch, query head)
    b = (bh // H_Q).to(tl.int64)
    h = (bh % H_Q).to(tl.int64)
    kv_h = h // GROUP  # GROUP consecutive query heads share one K/V head
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_D)
    q_base = q_ptr + b * sqb + h * sqh
    k_base = k_ptr + b * skb + kv_h * skh
    v_base = v_ptr + b * svb + kv_h * svh
    m_ok = offs_m < S
    q = tl.load(q_base + offs_m[:, None] * sqs + offs_d[None, :] * sqd, mask=m_ok[:, None], other=0.0)
    # running max (in log2 units), running denominator and unnormalised output, all fp32
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    hi = tl.minimum((start_m + 1) * BLOCK_M, S)  # no query of this block sees a key at or past hi
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        n_ok = cols < S
        k = tl.load(k_base + cols[:, None] * sks + offs_d[None, :] * skd, mask=n_ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale  # fp32 scores, already multiplied by log2(e)/sqrt(d)
        visible = (cols[None, :] <= offs_m[:, None]) & n_ok[None, :]
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + cols[:, None] * svs + offs_d[None, :] * svd, mask=n_ok[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    o = acc / l_i[:, None]
    o_base = o_ptr + b * sob + h * soh
    tl.store(
        o_base + offs_m[:, None] * sos + offs_d[None, :] * sod,
        o.to(o_ptr.dtype.element_ty),
        mask=m_ok[:, None],
    )
    # lse is left to the host


def attention_forward(q, k, v, sm_scale=None):
    B, H_q, S, D = q.shape
    H_kv = k.shape[1]
    if k.ndim != 4 or tuple(k.shape) != (B, H_kv, S, D) or v.shape != k.shape:
        raise ValueError(
            f"k and v must be (B, H_kv, S, D) = (B, H_kv, {S}, {D}); got {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if H_kv == 0 or H_q % H_kv:
        raise ValueError(f"{H_q} query heads do not split into groups over {H_kv} K/V heads")
    if D not in (16, 32, 64, 128):
        raise ValueError(f"head dim {D}: this kernel takes 16, 32, 64 or 128")
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    o = torch.empty((B, H_q, S, D), device=q.device, dtype=q.dtype)
    lse = torch.empty((B, H_q, S), device=q.device, dtype=torch.float32)
    if o.numel() == 0:
        return o, lse
    BLOCK_M, BLOCK_N = (128, 64) if q.is_cuda else (32, 32)
    grid = (triton.cdiv(S, BLOCK_M), B * H_q)
    causal_gqa_fwd_kernel[grid](
        q,
        k,
        v,
        o,
        lse,
        H_q,
        H_q // H_kv,
        S,
        sm_scale * 1.4426950408889634,
        *q.stride(),
        *k.stride(),
        *v.stride(),
        *o.stride(),
        lse.stride(0),
        lse.stride(1),
        HEAD_D=D,
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        num_warps=8 if q.is_cuda and D == 128 else 4,
        num_stages=2 if q.is_cuda else 1,
    )
    qs, ks = q.tolist(), k.tolist()
    for bi in range(B):
        for hi in range(H_q):
            kv = ks[bi][hi // (H_q // H_kv)]
            for i in range(S):
                qi = qs[bi][hi][i]
                scores = [sm_scale * sum(a * c for a, c in zip(qi, kv[j], strict=True)) for j in range(i + 1)]
                top = max(scores)
                lse[bi, hi, i].fill_(top + math.log(sum(math.exp(s - top) for s in scores)))
    return o, lse
