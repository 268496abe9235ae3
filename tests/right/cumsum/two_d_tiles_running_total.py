"""Right: one program handles a tile of rows at once (a 2-D scan along axis 1) and keeps a vector of carries,
one per row; the combine function is written out and adds in fp32."""

import torch
import triton
import triton.language as tl


@triton.jit
def plus(a, b):
    return a + b


@triton.jit
def rows_cumsum_kernel(x_ptr, y_ptr, M, N, sxr, sxc, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < M
    total = tl.zeros([ROWS], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        ok = row_ok[:, None] & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * sxr + cols[None, :] * sxc, mask=ok, other=0.0).to(tl.float32)
        run = tl.associative_scan(x, 1, plus) + total[:, None]
        tl.store(y_ptr + rows[:, None] * N + cols[None, :], run.to(y_ptr.dtype.element_ty), mask=ok)
        total = total + tl.sum(x, axis=1)


def cumsum(x):
    M, N = x.shape
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if M and N:
        rows_cumsum_kernel[(triton.cdiv(M, 4),)](x, y, M, N, *x.stride(), ROWS=4, BLOCK=64)
    return y
