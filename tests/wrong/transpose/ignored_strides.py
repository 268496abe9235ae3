"""Wrong: x is assumed contiguous (offset row * N + col) — wrong for sliced or transposed inputs."""

import torch
import triton
import triton.language as tl


@triton.jit
def t_kernel(x, out, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(x + rm[:, None] * N + rn[None, :], mask=mask)
    tl.store(out + rn[None, :] * M + rm[:, None], tile, mask=mask)


def transpose(x):
    M, N = x.shape
    out = torch.empty((N, M), dtype=x.dtype, device=x.device)
    t_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](x, out, M, N, BM=32, BN=32)
    return out
