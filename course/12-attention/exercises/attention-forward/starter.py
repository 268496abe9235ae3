"""Exercise attention-forward: the FlashAttention forward pass.

attention_forward(q, k, v, causal=False, sm_scale=None) -> (o, lse)
    q, k, v: (B, H, S, D) with any strides, fp16 or bf16, D in {16, 32, 64, 128}
    s   = q @ k^T * sm_scale                (sm_scale defaults to 1 / sqrt(D))
    causal=True: query i sees keys j <= i only (s[i, j] = -inf for j > i)
    o   = softmax(s, -1) @ v                (B, H, S, D), q's dtype
    lse = log(sum_j exp(s[i, j]))           (B, H, S), float32, natural log: saved for a backward pass
One program per (block of BLOCK_M queries, batch * head); it walks over the keys BLOCK_N at a time with the
online softmax of lesson 8 and tl.dot of lesson 9, so the S x S matrix never goes to memory.

Check it with:  tritonlab check attention-forward
"""

import math

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, H, S, qk_scale,
                    sqb, sqh, sqs, sqd, skb, skh, sks, skd, svb, svh, svs, svd,
                    sob, soh, sos, sod, slb, slh,
                    CAUSAL: tl.constexpr, HEAD_D: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_D)
    q_base = q_ptr + b * sqb + h * sqh
    k_base = k_ptr + b * skb + h * skh
    v_base = v_ptr + b * svb + h * svh
    m_ok = offs_m < S
    q = tl.load(q_base + offs_m[:, None] * sqs + offs_d[None, :] * sqd, mask=m_ok[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    # TODO: causal: no key after the block's last query is visible, so the loop can stop early
    for start_n in range(0, S, BLOCK_N):
        cols = start_n + offs_n
        n_ok = cols < S
        k = tl.load(k_base + cols[:, None] * sks + offs_d[None, :] * skd, mask=n_ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k))
        # TODO: scale the scores (qk_scale already includes log2(e), for tl.exp2), and set to -inf the keys
        #       past S and, when CAUSAL, the keys after each query
        # TODO: online softmax: a new running max m_new, rescale l_i and acc by tl.exp2(m_i - m_new)
        p = tl.exp2(s)
        l_i = l_i + tl.sum(p, axis=1)
        v = tl.load(v_base + cols[:, None] * svs + offs_d[None, :] * svd, mask=n_ok[:, None], other=0.0)
        acc = acc + tl.dot(p.to(v.dtype), v)
    o = acc / l_i[:, None]
    o_base = o_ptr + b * sob + h * soh
    tl.store(o_base + offs_m[:, None] * sos + offs_d[None, :] * sod, o.to(o_ptr.dtype.element_ty),
             mask=m_ok[:, None])
    lse = tl.zeros([BLOCK_M], dtype=tl.float32)  # TODO: the log-sum-exp of each row, in natural-log units
    tl.store(lse_ptr + b * slb + h * slh + offs_m, lse, mask=m_ok)


def attention_forward(q, k, v, causal=False, sm_scale=None):
    B, H, S, D = q.shape
    assert k.shape == q.shape and v.shape == q.shape and D in (16, 32, 64, 128)
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    o = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    lse = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
    if o.numel() == 0:
        return o, lse
    BLOCK_M, BLOCK_N = (128, 64) if q.is_cuda else (32, 32)
    grid = (triton.cdiv(S, BLOCK_M), B * H)
    attn_fwd_kernel[grid](q, k, v, o, lse, H, S, sm_scale * 1.4426950408889634,
                          *q.stride(), *k.stride(), *v.stride(), *o.stride(), lse.stride(0), lse.stride(1),
                          CAUSAL=causal, HEAD_D=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                          num_warps=8 if q.is_cuda and D == 128 else 4,
                          num_stages=2 if q.is_cuda else 1)
    return o, lse


if __name__ == "__main__":
    q, k, v = (torch.randn(1, 2, 77, 64, device=DEVICE, dtype=torch.float16) for _ in range(3))
    for causal in (False, True):
        o, lse = attention_forward(q, k, v, causal=causal)
        s = (q.double() @ k.double().transpose(-1, -2)) / 8.0
        if causal:
            s = s.masked_fill(torch.ones(77, 77, dtype=torch.bool, device=DEVICE).triu(1), float("-inf"))
        ref = torch.softmax(s, dim=-1) @ v.double()
        print(f"causal={causal}: max |o - ref| = {(o.double() - ref).abs().max().item():.2e}, "
              f"max |lse - ref| = {(lse.double() - torch.logsumexp(s, -1)).abs().max().item():.2e}")
