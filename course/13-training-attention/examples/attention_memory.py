"""What the backward keeps in memory: eager (unfused) attention against the fused kernels of lesson 13.

Counts, with torch.autograd.graph.saved_tensors_hooks, every tensor autograd saves for the backward of
softmax(Q·Kᵀ·scale)·V written as three torch operations, checks the count against the formula
B·H·(3·S·D + S²) elements (Q, K, V and the probabilities P), and prints both formulas at the lesson's
benchmark shape. Runs anywhere (CPU or GPU): the count is exact, not a timing.
"""

import math

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def saved_bytes(fn, *inputs):
    """Bytes of the distinct storages autograd saves while `fn` runs (a view of an input counts once)."""
    seen = {}

    def pack(t):
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*inputs)
    return out, sum(seen.values())


def eager_attention(q, k, v):
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    return torch.softmax(s, dim=-1) @ v


def eager_formula(B, H, S, D, elem):
    return B * H * (3 * S * D + S * S) * elem      # Q, K, V and P


def fused_formula(B, H, S, D, elem):
    return B * H * (4 * S * D * elem + 4 * S)      # Q, K, V, O and the fp32 lse


B, H, S, D = 1, 2, 256, 64
q, k, v = (torch.randn(B, H, S, D, device=DEVICE, requires_grad=True) for _ in range(3))
o, measured = saved_bytes(eager_attention, q, k, v)
print(f"eager attention at B={B} H={H} S={S} D={D}, fp32: autograd saved {measured} bytes")
assert measured == eager_formula(B, H, S, D, 4), (measured, eager_formula(B, H, S, D, 4))
print(f"  = B·H·(3·S·D + S²)·4: Q, K, V and the {S}×{S} probabilities of each head")

B, H, S, D, elem = 4, 32, 4096, 128, 2   # the lesson's benchmark shape, bf16
print(f"at B={B} H={H} S={S} D={D}, bf16:")
print(f"  eager saves {eager_formula(B, H, S, D, elem) / 1e9:.1f} GB for the backward, "
      f"{B * H * S * S * elem / 1e9:.1f} GB of it the probabilities")
print(f"  the fused forward saves {fused_formula(B, H, S, D, elem) / 1e9:.3f} GB (Q, K, V, O and lse)")
print(f"  the fused backward adds Δ: {B * H * S * 4 / 1e6:.1f} MB; eager's backward adds dP and dS, "
      f"{2 * B * H * S * S * elem / 1e9:.1f} GB")
