"""Wrong: for a column-major x, `x.t()` already is a contiguous x.T, so it launches a kernel that writes
nothing and returns that view; other layouts get a real transposing kernel. Right values, contiguous, and the
replay rebuilds the input the view points into: only the output sharing x's memory gives it away."""

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_tiles(x_ptr, out_ptr, M, N, sxm, sxn, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=mask)
    tl.store(out_ptr + rn[None, :] * M + rm[:, None], tile, mask=mask)


@triton.jit
def nothing(dst):
    pass


def transpose(x: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    if x.numel() and x.t().is_contiguous():
        nothing[(1,)](x)
        return x.t()
    out = torch.empty((N, M), dtype=x.dtype, device=x.device)
    if out.numel():
        transpose_tiles[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
            x, out, M, N, x.stride(0), x.stride(1), BM=32, BN=32
        )
    return out
