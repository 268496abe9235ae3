"""Exercise cumsum: running sums of long rows with tl.associative_scan.

cumsum(x) -> y
    x: 2-D (M, N), any strides, float32, float16 or bfloat16
    y[r, c] = x[r, 0] + x[r, 1] + ... + x[r, c]      (inclusive), a new contiguous (M, N) tensor, x's dtype
    sum in fp32 and round once, when you store
A row can be longer than any block (a GPU case has rows of more than 2**20 elements, the largest block
Triton allows), so a program walks its row BLOCK elements at a time.

Check it with:  tritonlab check cumsum
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, n_cols, sxr, sxc, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        ok = cols < n_cols
        x = tl.load(x_ptr + row * sxr + cols * sxc, mask=ok, other=0.0).to(tl.float32)
        run = x  # TODO: the running sums of this block (tl.associative_scan), and of the blocks before it
        tl.store(y_ptr + row * n_cols + cols, run.to(y_ptr.dtype.element_ty), mask=ok)


def cumsum(x):
    M, N = x.shape
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if M == 0 or N == 0:
        return y
    BLOCK = 1024 if x.is_cuda else 128   # a combine function of your own runs element by element on the interpreter
    cumsum_kernel[(M,)](x, y, N, *x.stride(), BLOCK=BLOCK)
    return y


if __name__ == "__main__":
    x = torch.randn(3, 1000, device=DEVICE)
    y = cumsum(x)
    print("max |error| against float64:", (y.double() - x.double().cumsum(1)).abs().max().item())
