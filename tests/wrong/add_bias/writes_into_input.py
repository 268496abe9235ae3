"""Wrong: the result is written into x (in place) and x is returned."""

import triton
import triton.language as tl


@triton.jit
def bias_kernel(x_ptr, b_ptr, M, N, sxm, sxn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * sxm + cols[None, :] * sxn, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cols < N).to(tl.float32)
    tl.store(
        x_ptr + rows[:, None] * sxm + cols[None, :] * sxn,
        (x + b[None, :]).to(x_ptr.dtype.element_ty),
        mask=mask,
    )


def add_bias(x, bias):
    M, N = x.shape
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    bias_kernel[grid](x, bias, M, N, x.stride(0), x.stride(1), BLOCK_M=32, BLOCK_N=32)
    return x
