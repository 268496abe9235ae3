"""Right: a 3-D grid (query block, query head, batch); the blocks left of the diagonal run without any mask and
only the diagonal blocks are masked (BLOCK_N divides BLOCK_M), as the tuned kernels do."""

import math

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def _block(
    acc,
    l_i,
    m_i,
    q,
    k_base,
    v_base,
    start_n,
    offs_m,
    offs_n,
    offs_d,
    S,
    sks,
    skd,
    svs,
    svd,
    qk_scale,
    DIAGONAL: tl.constexpr,
):
    cols = start_n + offs_n
    n_ok = cols < S
    k = tl.load(k_base + cols[None, :] * sks + offs_d[:, None] * skd, mask=n_ok[None, :], other=0.0)
    s = tl.dot(q, k) * qk_scale
    if DIAGONAL:
        s = tl.where((cols[None, :] <= offs_m[:, None]) & n_ok[None, :], s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, axis=1))
    p = tl.exp2(s - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    v = tl.load(v_base + cols[:, None] * svs + offs_d[None, :] * svd, mask=n_ok[:, None], other=0.0)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    return acc, l_i, m_new


@triton.jit
def causal_gqa(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    lse_ptr,
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
    h = tl.program_id(1).to(tl.int64)
    b = tl.program_id(2).to(tl.int64)
    kv = h // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_D)
    m_ok = offs_m < S
    q = tl.load(
        q_ptr + b * sqb + h * sqh + offs_m[:, None] * sqs + offs_d[None, :] * sqd,
        mask=m_ok[:, None],
        other=0.0,
    )
    k_base = k_ptr + b * skb + kv * skh
    v_base = v_ptr + b * svb + kv * svh
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    diag = start_m * BLOCK_M  # every key before it is visible to every query of the block
    for start_n in range(0, diag, BLOCK_N):
        acc, l_i, m_i = _block(
            acc,
            l_i,
            m_i,
            q,
            k_base,
            v_base,
            start_n,
            offs_m,
            offs_n,
            offs_d,
            S,
            sks,
            skd,
            svs,
            svd,
            qk_scale,
            False,
        )
    for start_n in range(diag, tl.minimum(diag + BLOCK_M, S), BLOCK_N):
        acc, l_i, m_i = _block(
            acc,
            l_i,
            m_i,
            q,
            k_base,
            v_base,
            start_n,
            offs_m,
            offs_n,
            offs_d,
            S,
            sks,
            skd,
            svs,
            svd,
            qk_scale,
            True,
        )
    tl.store(
        o_ptr + b * sob + h * soh + offs_m[:, None] * sos + offs_d[None, :] * sod,
        (acc / l_i[:, None]).to(o_ptr.dtype.element_ty),
        mask=m_ok[:, None],
    )
    tl.store(lse_ptr + b * slb + h * slh + offs_m, (m_i + tl.log2(l_i)) / 1.4426950408889634, mask=m_ok)


def attention_forward(q, k, v, sm_scale=None):
    B, H_q, S, D = q.shape
    H_kv = k.shape[1]
    if H_kv == 0 or H_q % H_kv:
        raise ValueError(f"H_q={H_q} must be a multiple of H_kv={H_kv}")
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    o = torch.empty((B, H_q, S, D), device=q.device, dtype=q.dtype)
    lse = torch.empty((B, H_q, S), device=q.device, dtype=torch.float32)
    BLOCK_M, BLOCK_N = (128, 64) if q.is_cuda else (32, 16)
    causal_gqa[(triton.cdiv(S, BLOCK_M), H_q, B)](
        q,
        k,
        v,
        o,
        lse,
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
    )
    return o, lse
