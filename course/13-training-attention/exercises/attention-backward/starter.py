"""Exercise attention-backward: the backward pass of CAUSAL attention.

attention_backward(q, k, v, o, lse, do, sm_scale=None) -> (dq, dk, dv)
    q, k, v: (B, H, S, D) with any strides, fp16 or bf16, D in {16, 32, 64, 128}
    o:       the forward's output softmax(s) @ v, (B, H, S, D), q's dtype
    lse:     the forward's log-sum-exp of every query's scores, (B, H, S), float32, natural log
    do:      the gradient of the loss with respect to o, (B, H, S, D), q's dtype
    the forward: s = q @ k^T * sm_scale (sm_scale defaults to 1 / sqrt(D)), s[i, j] = -inf for j > i (causal),
                 o = softmax(s, -1) @ v
    returns the gradients of the loss with respect to q, k and v: three new (B, H, S, D) tensors, q's dtype.
Never store an S x S matrix; lesson 13 derives the gradients and builds the non-causal kernels.

Check it with:  tritonlab check attention-backward
"""

import math

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


# TODO: the kernels. Lesson 13's plan: a small pass that computes one number per query first, then one
#       program per block of KEYS that owns its rows of dk and dv, and one program per block of QUERIES that
#       owns its rows of dq. What does causality let each of them skip, and what must it mask?
@triton.jit
def attn_bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, dk_ptr, dv_ptr, S,
                         HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pass  # TODO


def attention_backward(q, k, v, o, lse, do, sm_scale=None):
    B, H, S, D = q.shape
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    dq = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    dk = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    dv = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    # TODO: launch your kernels (every stride of q, k, v, o, lse and do, since they may be views)
    return dq, dk, dv


if __name__ == "__main__":
    S, D = 45, 64
    q, k, v, do = (torch.randn(1, 2, S, D, device=DEVICE, dtype=torch.float16) for _ in range(4))
    qd, kd, vd = (t.double().requires_grad_() for t in (q, k, v))
    s = (qd @ kd.transpose(-1, -2)) / math.sqrt(D)
    s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=DEVICE).triu(1), float("-inf"))
    o = torch.softmax(s, -1) @ vd
    o.backward(do.double())
    lse = torch.logsumexp(s, -1).float().detach()
    dq, dk, dv = attention_backward(q, k, v, o.detach().to(q.dtype), lse, do)
    for name, mine, ref in (("dq", dq, qd.grad), ("dk", dk, kd.grad), ("dv", dv, vd.grad)):
        print(f"{name}: max |error| {(mine.double() - ref).abs().max().item():.2e}")
