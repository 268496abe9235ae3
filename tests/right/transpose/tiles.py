"""Right: load a tile of x through its strides, store it transposed (64×16 tiles, grid lambda)."""

import torch
import triton
import triton.language as tl


@triton.jit
def t_kernel(x, out, M, N, s0, s1, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(x + rm[:, None] * s0 + rn[None, :] * s1, mask=mask)
    # out is [N, M], contiguous: element (j, i) lives at j * M + i
    tl.store(out + rn[None, :] * M + rm[:, None], tile, mask=mask)


def transpose(x):
    M, N = x.shape
    out = torch.empty((N, M), dtype=x.dtype, device=x.device)

    def grid(meta):
        return (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))

    t_kernel[grid](x, out, M, N, x.stride(0), x.stride(1), BM=64, BN=16)
    return out
