"""Exercise attention-forward: causal grouped-query attention, forward pass.

attention_forward(q, k, v, sm_scale=None) -> (o, lse)
    q:    (B, H_q,  S, D)    fp16 or bf16, any strides, D in {16, 32, 64, 128}
    k, v: (B, H_kv, S, D)    same dtype, any strides
    Grouped-query attention: H_q = g * H_kv, and query head h reads K/V head h // g (consecutive query heads
    form a group). If H_q is not a multiple of H_kv, raise ValueError.
    s[i, j] = (q[i] . k[j]) * sm_scale          sm_scale defaults to 1 / sqrt(D)
    causal: query i sees the keys j <= i only (the other scores are -inf)
    o   = softmax(s, -1) @ v                     (B, H_q, S, D), q's dtype
    lse = log(sum over j <= i of exp(s[i, j]))   (B, H_q, S), float32, natural log: kept for a backward pass

The S x S score matrix must never go to memory: one program per block of queries of one (batch, query head),
walking over the keys one block at a time with the online softmax, as in lesson 12. Lesson 12's kernel is the
non-causal one with H_q = H_kv; the causal mask, where the key loop can stop, and which K/V head a program reads
are yours to work out. The grader compares with float64 on small shapes whose lengths no block divides, with
groups of 1, 4 and 8 query heads.

Check it with:  tritonlab check attention-forward
"""

import math

import torch
import triton  # noqa: F401 - for the kernel you write
import triton.language as tl  # noqa: F401

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


# TODO: the @triton.jit kernel. One program per (block of queries, batch * query head); everything it needs
#       (sizes, strides, the group size, the scale) comes in as arguments.


def attention_forward(q, k, v, sm_scale=None):
    # TODO: check the shapes (raise ValueError when H_q is not a multiple of H_kv), allocate o and lse,
    #       launch the kernel on its grid and return (o, lse)
    raise NotImplementedError("attention_forward: write the kernel and its launcher")


def reference(q, k, v, sm_scale=None):
    """The contract in float64 PyTorch: compare your kernel with it on small, odd shapes."""
    B, H_q, S, D = q.shape
    g = H_q // k.shape[1]
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    kk, vv = (t.double().repeat_interleave(g, dim=1) for t in (k, v))  # query head h -> K/V head h // g
    s = (q.double() @ kk.transpose(-1, -2)) * scale
    s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ vv, torch.logsumexp(s, dim=-1)


if __name__ == "__main__":
    q = torch.randn(1, 8, 77, 64, device=DEVICE, dtype=torch.float16)
    k, v = (torch.randn(1, 2, 77, 64, device=DEVICE, dtype=torch.float16) for _ in range(2))
    o, lse = attention_forward(q, k, v)
    o_ref, lse_ref = reference(q, k, v)
    print(f"max |o - ref| = {(o.double() - o_ref).abs().max().item():.2e}, "
          f"max |lse - ref| = {(lse.double() - lse_ref).abs().max().item():.2e}")
