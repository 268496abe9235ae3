"""Dropout inside attention: the mask of the probabilities, drawn twice and never stored.

A @triton.jit helper gives the keep decision of score (i, j) of head `bh` from the counter
offset + (bh·S + i)·S + j. One kernel draws it the way the forward walks the scores (rows = queries), another
the way the dK/dV kernel walks them (rows = keys, the tile transposed); the two masks must be equal bit for bit.
Then a float64 check (torch autograd) of the backward formulas with dropout: Δ = rowsum(dO ⊙ O) still holds.
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def attention_keep(seed, offset, bh, S, rows, cols, p_drop):
    # rows: query indices, cols: key indices (any broadcastable shapes); 64-bit counters: B·H·S² can pass 2³¹
    counter = offset + (bh.to(tl.int64) * S + rows) * S + cols
    return tl.rand(seed, counter) >= p_drop


@triton.jit
def mask_as_forward(mask_ptr, S, seed, offset, p_drop, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    for start_n in range(0, S, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        keep = attention_keep(seed, offset, bh, S, offs_m[:, None], offs_n[None, :], p_drop)   # (queries, keys)
        ok = (offs_m[:, None] < S) & (offs_n[None, :] < S)
        tl.store(mask_ptr + (bh * S + offs_m[:, None]) * S + offs_n[None, :], keep.to(tl.int8), mask=ok)


@triton.jit
def mask_as_backward(mask_ptr, S, seed, offset, p_drop, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_n = tl.program_id(0)
    bh = tl.program_id(1)
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    for start_m in range(0, S, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        keep_t = attention_keep(seed, offset, bh, S, offs_m[None, :], offs_n[:, None], p_drop)  # (keys, queries)
        ok = (offs_n[:, None] < S) & (offs_m[None, :] < S)
        tl.store(mask_ptr + (bh * S + offs_n[:, None]) * S + offs_m[None, :], keep_t.to(tl.int8), mask=ok)


BH, S, p_drop, seed, offset = 3, 70, 0.2, 2024, 12345
forward_mask = torch.empty((BH, S, S), dtype=torch.int8, device=DEVICE)
backward_mask_t = torch.empty((BH, S, S), dtype=torch.int8, device=DEVICE)
mask_as_forward[(triton.cdiv(S, 32), BH)](forward_mask, S, seed, offset, p_drop, BLOCK_M=32, BLOCK_N=16)
mask_as_backward[(triton.cdiv(S, 16), BH)](backward_mask_t, S, seed, offset, p_drop, BLOCK_M=32, BLOCK_N=16)
same = torch.equal(forward_mask, backward_mask_t.transpose(1, 2))
print(f"forward and backward draw the same mask: {same}; kept {forward_mask.float().mean().item():.3f} "
      f"(1 - p_drop = {1 - p_drop})")
assert same
other = torch.empty_like(forward_mask)
mask_as_forward[(triton.cdiv(S, 32), BH)](other, S, seed + 1, offset, p_drop, BLOCK_M=32, BLOCK_N=16)
print(f"another seed changes {(other != forward_mask).float().mean().item():.3f} of the decisions "
      f"(independent masks: 2p(1 - p) = {2 * p_drop * (1 - p_drop):.2f})")

# The backward with dropout, in float64: O = (P ⊙ M / (1 - p))·V.
torch.manual_seed(0)
q, k, v, do = (torch.randn(1, 1, 9, 4, dtype=torch.float64) for _ in range(4))
keep = (torch.rand(1, 1, 9, 9) >= p_drop).double()
q.requires_grad_(), k.requires_grad_(), v.requires_grad_()
P = torch.softmax(q @ k.transpose(-1, -2) / 2.0, dim=-1)
o = (P * keep / (1 - p_drop)) @ v
o.backward(do)
dp = (do @ v.transpose(-1, -2)) * keep / (1 - p_drop)      # dP now carries the mask
delta = (do * o).sum(-1, keepdim=True)                      # still rowsum(dO ⊙ O)
ds = P * (dp - delta)
for name, mine, ref in (("dq", ds @ k / 2.0, q.grad), ("dk", ds.transpose(-1, -2) @ q / 2.0, k.grad),
                        ("dv", (P * keep / (1 - p_drop)).transpose(-1, -2) @ do, v.grad)):
    err = (mine - ref).abs().max().item()
    print(f"{name} with dropout: max |formula - autograd| = {err:.1e}")
    assert err < 1e-12
