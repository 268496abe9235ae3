"""Right: 2-D tiles, bias loaded once per tile with the column offsets, upcast to fp32."""

import torch
import triton
import triton.language as tl


@triton.jit
def bias_kernel(x_ptr, b_ptr, y_ptr, M, N, sxm, sxn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * sxm + cols[None, :] * sxn, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cols < N).to(tl.float32)
    tl.store(
        y_ptr + rows[:, None] * N + cols[None, :], (x + b[None, :]).to(y_ptr.dtype.element_ty), mask=mask
    )


def add_bias(x, bias):
    bias = bias.contiguous()  # a strided bias: one small host copy (the exercise allows it)
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 64))
    bias_kernel[grid](x, bias, y, M, N, x.stride(0), x.stride(1), BLOCK_M=16, BLOCK_N=64)
    return y
