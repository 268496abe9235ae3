"""Right: one program per (query block, batch, K/V head) that loops over the g query heads of its group, so the
group's keys are read by one program (from cache after the first head)."""

import math

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def grouped_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
    H_KV,
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
    b = (tl.program_id(1) // H_KV).to(tl.int64)
    kv = (tl.program_id(1) % H_KV).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_D)
    m_ok = offs_m < S
    hi = tl.minimum((start_m + 1) * BLOCK_M, S)
    for j in range(0, GROUP):
        h = kv * GROUP + j
        q = tl.load(
            q_ptr + b * sqb + h * sqh + offs_m[:, None] * sqs + offs_d[None, :] * sqd,
            mask=m_ok[:, None],
            other=0.0,
        )
        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
        for start_n in range(0, hi, BLOCK_N):
            cols = start_n + offs_n
            n_ok = cols < S
            k = tl.load(
                k_ptr + b * skb + kv * skh + cols[:, None] * sks + offs_d[None, :] * skd,
                mask=n_ok[:, None],
                other=0.0,
            )
            s = tl.dot(q, tl.trans(k)) * qk_scale
            s = tl.where(n_ok[None, :] & (offs_m[:, None] - cols[None, :] >= 0), s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            alpha = tl.exp2(m_i - m_new)
            p = tl.exp2(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(p, axis=1)
            v = tl.load(
                v_ptr + b * svb + kv * svh + cols[:, None] * svs + offs_d[None, :] * svd,
                mask=n_ok[:, None],
                other=0.0,
            )
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m_i = m_new
        tl.store(
            o_ptr + b * sob + h * soh + offs_m[:, None] * sos + offs_d[None, :] * sod,
            (acc / l_i[:, None]).to(o_ptr.dtype.element_ty),
            mask=m_ok[:, None],
        )
        tl.store(lse_ptr + b * slb + h * slh + offs_m, (m_i + tl.log2(l_i)) * 0.6931471805599453, mask=m_ok)


def attention_forward(q, k, v, sm_scale=None):
    B, H_q, S, D = q.shape
    H_kv = k.shape[1]
    if H_kv == 0 or H_q % H_kv:
        raise ValueError(f"{H_q} query heads cannot be grouped over {H_kv} K/V heads")
    scale = (1.0 / math.sqrt(D) if sm_scale is None else sm_scale) * math.log2(math.e)
    o = torch.empty((B, H_q, S, D), device=q.device, dtype=q.dtype)
    lse = torch.empty((B, H_q, S), device=q.device, dtype=torch.float32)
    BLOCK_M, BLOCK_N = (128, 64) if q.is_cuda else (32, 32)
    grouped_kernel[(triton.cdiv(S, BLOCK_M), B * H_kv)](
        q,
        k,
        v,
        o,
        lse,
        H_kv,
        H_q // H_kv,
        S,
        scale,
        *q.stride(),
        *k.stride(),
        *v.stride(),
        *o.stride(),
        lse.stride(0),
        lse.stride(1),
        HEAD_D=D,
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
    )
    return o, lse
