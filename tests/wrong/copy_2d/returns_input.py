"""Wrong: when x is already contiguous, it launches a kernel that writes nothing and returns x itself, not a
copy. The values are x's, so they match, and the launch record's output points at the input, which the replay
rebuilds: only the output sharing the input's memory gives it away."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_copy(src, dst, N, src_row_stride, src_col_stride, dst_row_stride, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, N, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < N
        v = tl.load(src + row * src_row_stride + cols * src_col_stride, mask=mask)
        tl.store(dst + row * dst_row_stride + cols, v, mask=mask)


@triton.jit
def nothing(dst):
    pass


def copy_2d(x: torch.Tensor) -> torch.Tensor:
    if x.is_contiguous():
        nothing[(1,)](x)
        return x
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    row_copy[(x.shape[0],)](x, out, x.shape[1], x.stride(0), x.stride(1), out.stride(0), CHUNK=64)
    return out
