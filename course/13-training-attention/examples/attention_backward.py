"""The attention backward of lesson 13 (non-causal): three kernels, checked against float64 autograd.

Runs on the interpreter (TRITON_INTERPRET=1) in a few seconds and on a GPU. Prints the largest error of dq, dk
and dv on odd shapes for D = 64 and 128, against the error a float64 computation rounded to fp16 makes, and
checks that two calls give the same bits (no atomics: every row is written by one program).
"""

import math

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def attn_bwd_delta_kernel(o_ptr, do_ptr, delta_ptr, H, S,
                          sob, soh, sos, sod, sgb, sgh, sgs, sgd,
                          HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr):
    # Δ_i = Σ_d dO[i, d]·O[i, d]. Reads 2·S·D elements per head, writes S floats: a cheap pre-pass.
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    ok = offs_m < S
    o = tl.load(o_ptr + b * sob + h * soh + offs_m[:, None] * sos + offs_d[None, :] * sod,
                mask=ok[:, None], other=0.0).to(tl.float32)
    do = tl.load(do_ptr + b * sgb + h * sgh + offs_m[:, None] * sgs + offs_d[None, :] * sgd,
                 mask=ok[:, None], other=0.0).to(tl.float32)
    tl.store(delta_ptr + bh.to(tl.int64) * S + offs_m, tl.sum(o * do, axis=1), mask=ok)


@triton.jit
def attn_bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, H, S, sm_scale,
                         sqb, sqh, sqs, sqd, skb, skh, sks, skd, svb, svh, svs, svd,
                         sgb, sgh, sgs, sgd, slb, slh, sls,
                         HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # One program per block of BLOCK_N keys: dK and dV of these keys sum over ALL queries, so the program
    # streams the query blocks and keeps both sums in registers. Per query block: 4 tl.dot of
    # BLOCK_N·BLOCK_M·D each (Pᵀ rebuilt, dV, dPᵀ, dK) -> 8·S²·D FLOPs per head in all.
    start_n = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_D)
    n_ok = offs_n < S
    k = tl.load(k_ptr + b * skb + h * skh + offs_n[:, None] * sks + offs_d[None, :] * skd,
                mask=n_ok[:, None], other=0.0)
    v = tl.load(v_ptr + b * svb + h * svh + offs_n[:, None] * svs + offs_d[None, :] * svd,
                mask=n_ok[:, None], other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_D], dtype=tl.float32)
    for start_m in range(0, S, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        m_ok = offs_m < S
        q = tl.load(q_ptr + b * sqb + h * sqh + offs_m[:, None] * sqs + offs_d[None, :] * sqd,
                    mask=m_ok[:, None], other=0.0)
        do = tl.load(do_ptr + b * sgb + h * sgh + offs_m[:, None] * sgs + offs_d[None, :] * sgd,
                     mask=m_ok[:, None], other=0.0)
        lse = tl.load(lse_ptr + b * slb + h * slh + offs_m * sls, mask=m_ok, other=0.0)
        delta = tl.load(delta_ptr + bh.to(tl.int64) * S + offs_m, mask=m_ok, other=0.0)
        s_t = tl.dot(k, tl.trans(q)) * sm_scale                   # (keys, queries): the scores, transposed
        p_t = tl.where(m_ok[None, :], tl.exp(s_t - lse[None, :]), 0.0)   # P rebuilt from the saved lse
        dv += tl.dot(p_t.to(do.dtype), do)                        # dV = Pᵀ·dO
        dp_t = tl.dot(v, tl.trans(do))                            # dPᵀ = V·dOᵀ
        ds_t = p_t * (dp_t - delta[None, :])                      # dSᵀ = Pᵀ ⊙ (dPᵀ − Δ)
        dk += tl.dot(ds_t.to(q.dtype), q)                         # dK = dSᵀ·Q (· scale, below)
    out = bh.to(tl.int64) * S * HEAD_D + offs_n[:, None] * HEAD_D + offs_d[None, :]
    tl.store(dk_ptr + out, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=n_ok[:, None])
    tl.store(dv_ptr + out, dv.to(dv_ptr.dtype.element_ty), mask=n_ok[:, None])


@triton.jit
def attn_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, H, S, sm_scale,
                       sqb, sqh, sqs, sqd, skb, skh, sks, skd, svb, svh, svs, svd,
                       sgb, sgh, sgs, sgd, slb, slh, sls,
                       HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # One program per block of BLOCK_M queries: dQ sums over all KEYS, the other loop order. It rebuilds P and
    # dP once more (3 tl.dot per key block: S, dP, dQ -> 6·S²·D FLOPs per head) and writes each row of dQ once.
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    m_ok = offs_m < S
    q = tl.load(q_ptr + b * sqb + h * sqh + offs_m[:, None] * sqs + offs_d[None, :] * sqd,
                mask=m_ok[:, None], other=0.0)
    do = tl.load(do_ptr + b * sgb + h * sgh + offs_m[:, None] * sgs + offs_d[None, :] * sgd,
                 mask=m_ok[:, None], other=0.0)
    lse = tl.load(lse_ptr + b * slb + h * slh + offs_m * sls, mask=m_ok, other=0.0)
    delta = tl.load(delta_ptr + bh.to(tl.int64) * S + offs_m, mask=m_ok, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    for start_n in range(0, S, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        n_ok = offs_n < S
        k = tl.load(k_ptr + b * skb + h * skh + offs_n[:, None] * sks + offs_d[None, :] * skd,
                    mask=n_ok[:, None], other=0.0)
        v = tl.load(v_ptr + b * svb + h * svh + offs_n[:, None] * svs + offs_d[None, :] * svd,
                    mask=n_ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        p = tl.where(n_ok[None, :], tl.exp(s - lse[:, None]), 0.0)    # keys past S weigh nothing
        ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k)
    out = bh.to(tl.int64) * S * HEAD_D + offs_m[:, None] * HEAD_D + offs_d[None, :]
    tl.store(dq_ptr + out, (dq * sm_scale).to(dq_ptr.dtype.element_ty), mask=m_ok[:, None])


def attention_backward(q, k, v, o, lse, do, sm_scale=None):
    B, H, S, D = q.shape
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    dq, dk, dv = (torch.empty((B, H, S, D), device=q.device, dtype=q.dtype) for _ in range(3))
    delta = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
    BLOCK_M, BLOCK_N = (64, 64) if q.is_cuda else (32, 32)
    warps = 8 if q.is_cuda and D == 128 else 4
    attn_bwd_delta_kernel[(triton.cdiv(S, BLOCK_M), B * H)](o, do, delta, H, S, *o.stride(), *do.stride(),
                                                           HEAD_D=D, BLOCK_M=BLOCK_M)
    strides = (*q.stride(), *k.stride(), *v.stride(), *do.stride(), *lse.stride())
    attn_bwd_dkdv_kernel[(triton.cdiv(S, BLOCK_N), B * H)](q, k, v, do, lse, delta, dk, dv, H, S, sm_scale,
                                                          *strides, HEAD_D=D, BLOCK_M=BLOCK_M,
                                                          BLOCK_N=BLOCK_N, num_warps=warps)
    attn_bwd_dq_kernel[(triton.cdiv(S, BLOCK_M), B * H)](q, k, v, do, lse, delta, dq, H, S, sm_scale,
                                                        *strides, HEAD_D=D, BLOCK_M=BLOCK_M,
                                                        BLOCK_N=BLOCK_N, num_warps=warps)
    return dq, dk, dv


def forward_and_grads(q, k, v, do):
    """What lesson 12's forward saves (o rounded to q's dtype, lse in fp32) and the float64 gradients."""
    qd, kd, vd = (t.double().requires_grad_() for t in (q, k, v))
    s = (qd @ kd.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    o = torch.softmax(s, dim=-1) @ vd
    o.backward(do.double())
    return o.detach().to(q.dtype), torch.logsumexp(s, -1).detach().float(), (qd.grad, kd.grad, vd.grad)


if __name__ == "__main__":
    torch.manual_seed(0)
    for S, D in ((77, 64), (45, 128), (1, 64)):
        q, k, v, do = (torch.randn(1, 2, S, D, device=DEVICE, dtype=torch.float16) for _ in range(4))
        o, lse, exact = forward_and_grads(q, k, v, do)
        mine = attention_backward(q, k, v, o, lse, do)
        again = attention_backward(q, k, v, o, lse, do)
        for name, got, ref, repeat in zip(("dq", "dk", "dv"), mine, exact, again, strict=True):
            err = (got.double() - ref).abs().max().item()
            floor = (ref.to(q.dtype).double() - ref).abs().max().item()   # rounding the exact answer to fp16
            print(f"S={S:3d} D={D:3d} {name}: max |error| {err:.1e} (rounding alone {floor:.1e})")
            assert err < 20 * floor + 1e-3, (S, D, name, err)
            assert torch.equal(got, repeat), "two calls must give the same bits"
    print("every gradient matches float64; two calls gave the same bits")
