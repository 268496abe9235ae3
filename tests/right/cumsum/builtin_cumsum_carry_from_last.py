"""Right: tl.cumsum (tl.associative_scan with the built-in add), the carry taken from the block's last running sum."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def add(a, b):
    return a + b


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, n_cols, sxr, sxc, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    carry = tl.zeros([], dtype=tl.float32)  # the sum of the row's earlier blocks
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        ok = cols < n_cols
        x = tl.load(x_ptr + row * sxr + cols * sxc, mask=ok, other=0.0).to(tl.float32)
        run = tl.cumsum(x, 0) + carry
        tl.store(y_ptr + row * n_cols + cols, run.to(y_ptr.dtype.element_ty), mask=ok)
        carry = tl.max(tl.where(cols == tl.minimum(start + BLOCK, n_cols) - 1, run, float("-inf")), axis=0)
    # (tl.sum(x) equals the block's last running sum minus the old carry; masked lanes hold 0)


def cumsum(x):
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D (rows, columns), got shape {tuple(x.shape)}")
    M, N = x.shape
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if M == 0 or N == 0:
        return y
    # a combine function of your own runs element by element on the interpreter: small blocks there
    BLOCK = 256
    cumsum_kernel[(M,)](x, y, N, *x.stride(), BLOCK=BLOCK)
    return y
