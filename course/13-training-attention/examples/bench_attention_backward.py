"""Benchmark the lesson's attention backward against every SDPA backend's backward on a GPU, and the memory
that eager attention's backward needs against the fused kernels'.

Prints a notice and exits 0 on the interpreter. The kernels are those of `attention_backward.py` (a test keeps
the two copies equal). FLOPs are counted as 10·B·H·S²·D for every implementation (five S×S×D products: the
scores, dV, dP, dK, dQ), whatever each one recomputes, so that TFLOP/s compare the same work.
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


def saved_by_forward(q, k, v):
    """o and lse as the forward saves them, computed in fp32 one batch element at a time."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    o, lse = torch.empty_like(q), torch.empty(q.shape[:3], device=q.device, dtype=torch.float32)
    for b in range(q.shape[0]):
        s = (q[b].float() @ k[b].float().transpose(-1, -2)) * scale
        lse[b] = torch.logsumexp(s, dim=-1)
        o[b] = (torch.softmax(s, dim=-1) @ v[b].float()).to(q.dtype)
    return o, lse


def peak_gb(fn):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 1e9


def eager_forward_backward(q, k, v, do):
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    (torch.softmax(s, dim=-1) @ v).backward(do)


def bench_backward(B=4, H=32, S=4096, D=128, dtype=torch.bfloat16):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v, do = (torch.randn(B, H, S, D, device=DEVICE, dtype=dtype) for _ in range(4))
    o, lse = saved_by_forward(q, k, v)
    flops = 10 * B * H * S * S * D
    ms = triton.testing.do_bench(lambda: attention_backward(q, k, v, o, lse, do), return_mode="median")
    print(f"B={B} H={H} S={S} D={D} {dtype}: ours {ms:.2f} ms ({flops / ms / 1e9:.0f} TFLOP/s)")
    for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
        qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
        try:
            with sdpa_kernel(backend):
                out = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg)
                ms_b = triton.testing.do_bench(
                    lambda out=out: torch.autograd.grad(out, (qg, kg, vg), do, retain_graph=True),
                    return_mode="median")
        except RuntimeError as exc:
            print(f"  SDPA {backend.name}: not available here ({str(exc).splitlines()[0][:80]})")
            continue
        print(f"  SDPA {backend.name} backward {ms_b:.2f} ms ({flops / ms_b / 1e9:.0f} TFLOP/s)")


def memory(B=1, H=32, S=4096, D=128, dtype=torch.bfloat16):
    q, k, v, do = (torch.randn(B, H, S, D, device=DEVICE, dtype=dtype) for _ in range(4))
    o, lse = saved_by_forward(q, k, v)
    eager = peak_gb(lambda: eager_forward_backward(q, k, v, do))
    fused = peak_gb(lambda: attention_backward(q, k, v, o, lse, do))
    print(f"peak memory beyond the inputs at B={B} H={H} S={S} D={D}: eager forward + backward {eager:.2f} GB, "
          f"fused backward {fused:.3f} GB")


if DEVICE == "cuda":
    for d in (128, 64):
        bench_backward(D=d)
    memory()
else:
    print("The backward benchmark needs a GPU: the interpreter's timings measure NumPy.")
