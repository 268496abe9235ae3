"""Right: natural exp, small blocks, the head on grid axis 0 and the query block on axis 1, and the K/V head
computed as h * H_kv // H_q (the same as h // g when H_q = g * H_kv)."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def attn_kernel(
    Q,
    K,
    V,
    Out,
    L,
    n_q_heads,
    n_kv_heads,
    seq,
    scale,
    q_strides_b,
    q_strides_h,
    q_strides_s,
    q_strides_d,
    k_strides_b,
    k_strides_h,
    k_strides_s,
    k_strides_d,
    v_strides_b,
    v_strides_h,
    v_strides_s,
    v_strides_d,
    o_strides_b,
    o_strides_h,
    o_strides_s,
    o_strides_d,
    l_strides_b,
    l_strides_h,
    D: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
):
    pid_bh = tl.program_id(0)
    pid_m = tl.program_id(1)
    batch = pid_bh // n_q_heads
    head = pid_bh % n_q_heads
    kv_head = head * n_kv_heads // n_q_heads
    rows = pid_m * BM + tl.arange(0, BM)
    dims = tl.arange(0, D)
    row_ok = rows < seq
    q = tl.load(
        Q
        + batch * q_strides_b
        + head * q_strides_h
        + rows[:, None] * q_strides_s
        + dims[None, :] * q_strides_d,
        mask=row_ok[:, None],
        other=0.0,
    )
    best = tl.zeros([BM], dtype=tl.float32) - float("inf")
    total = tl.zeros([BM], dtype=tl.float32)
    out = tl.zeros([BM, D], dtype=tl.float32)
    end = tl.minimum(pid_m * BM + BM, seq)
    for first in range(0, end, BN):
        keys = first + tl.arange(0, BN)
        key_ok = keys < seq
        kt = tl.load(
            K
            + batch * k_strides_b
            + kv_head * k_strides_h
            + keys[None, :] * k_strides_s
            + dims[:, None] * k_strides_d,
            mask=key_ok[None, :],
            other=0.0,
        )
        scores = tl.dot(q, kt) * scale
        scores = tl.where((keys[None, :] <= rows[:, None]) & key_ok[None, :], scores, float("-inf"))
        new_best = tl.maximum(best, tl.max(scores, axis=1))
        weights = tl.exp(scores - new_best[:, None])
        shrink = tl.exp(best - new_best)
        vals = tl.load(
            V
            + batch * v_strides_b
            + kv_head * v_strides_h
            + keys[:, None] * v_strides_s
            + dims[None, :] * v_strides_d,
            mask=key_ok[:, None],
            other=0.0,
        )
        out = out * shrink[:, None] + tl.dot(weights.to(vals.dtype), vals)
        total = total * shrink + tl.sum(weights, axis=1)
        best = new_best
    tl.store(
        Out
        + batch * o_strides_b
        + head * o_strides_h
        + rows[:, None] * o_strides_s
        + dims[None, :] * o_strides_d,
        (out / total[:, None]).to(Out.dtype.element_ty),
        mask=row_ok[:, None],
    )
    tl.store(L + batch * l_strides_b + head * l_strides_h + rows, best + tl.log(total), mask=row_ok)


def attention_forward(q, k, v, sm_scale=None):
    batch, n_q, seq, d = q.shape
    n_kv = k.shape[1]
    if n_kv < 1 or n_q % n_kv:
        raise ValueError("the query heads must split evenly over the K/V heads")
    scale = sm_scale if sm_scale is not None else d**-0.5
    o = torch.empty(q.shape, device=q.device, dtype=q.dtype)
    lse = torch.empty((batch, n_q, seq), device=q.device, dtype=torch.float32)
    bm, bn = (64, 32) if q.is_cuda else (16, 16)
    attn_kernel[(batch * n_q, triton.cdiv(seq, bm))](
        q,
        k,
        v,
        o,
        lse,
        n_q,
        n_kv,
        seq,
        scale,
        *q.stride(),
        *k.stride(),
        *v.stride(),
        *o.stride(),
        *lse.stride()[:2],
        D=d,
        BM=bm,
        BN=bn,
    )
    return o, lse
