"""Exercise transpose: out = x.T, contiguous, for a 2-D x with any strides.

transpose(x) -> a new contiguous tensor of shape (N, M) with out[j, i] == x[i, j].

Check it with:  tritonlab check transpose
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def transpose_kernel(x_ptr, out_ptr, M, N,
                     stride_xm, stride_xn, stride_o0, stride_o1,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x has shape (M, N); out has shape (N, M) and strides (stride_o0, stride_o1).
    # cost model: reads M·N, writes M·N elements -> bytes = 2·M·N·size
    # TODO: which tile is this program's? Read its coordinates along the two axes of the grid.
    # TODO: offsets of this program's rows and columns of x, and the 2-D mask.
    # TODO: load the [BLOCK_M, BLOCK_N] tile of x through x's strides.
    # TODO: store it so that x[i, j] lands in out[j, i] (use out's strides).
    pass


def transpose(x, BLOCK_M=32, BLOCK_N=32):
    assert x.ndim == 2, "transpose expects a 2-D tensor"
    M, N = x.shape
    out = torch.empty((N, M), device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out
    # TODO: the 2-D grid: how many programs along each axis, so that every BLOCK_M × BLOCK_N tile of the
    #       input x (M × N) gets exactly one program, in the axis order your kernel reads with tl.program_id.
    grid = (1, 1)
    transpose_kernel[grid](x, out, M, N,
                           x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                           BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out


if __name__ == "__main__":
    x = torch.randn(37, 50, device=DEVICE)[:, 5:45]
    out = transpose(x)
    print("shape", tuple(out.shape), "contiguous:", out.is_contiguous(), " matches:", torch.equal(out, x.T))
