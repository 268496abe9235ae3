"""Exercise copy-2d: a contiguous copy of a 2-D tensor with arbitrary strides.

copy_2d(x) -> a new contiguous tensor equal to x (same shape, same dtype).
x may be transposed (x.t()), sliced (x[:, 3:40]) or have strided rows (x[::2]).

Check it with:  tritonlab check copy-2d
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def copy_2d_kernel(x_ptr, out_ptr, M, N,
                   stride_xm, stride_xn, stride_om, stride_on,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # cost model: reads M·N, writes M·N elements -> bytes = 2·M·N·size
    # TODO: which tile is this program's? Read its coordinates along the two axes of the grid.
    # TODO: the row offsets and column offsets this program covers (two 1-D vectors).
    # TODO: a 2-D mask that is True only inside the M x N tensor.
    # TODO: load the tile through x's strides, store it through out's strides.
    pass


def copy_2d(x, BLOCK_M=32, BLOCK_N=32):
    assert x.ndim == 2, "copy_2d expects a 2-D tensor"
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out
    # TODO: the 2-D grid: how many programs along each axis, so that every BLOCK_M × BLOCK_N tile of the
    #       output gets exactly one program, in the axis order your kernel reads with tl.program_id.
    grid = (1, 1)
    copy_2d_kernel[grid](x, out, M, N,
                         x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                         BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out


if __name__ == "__main__":
    x = torch.randn(50, 37, device=DEVICE).t()[3:30]  # transposed and sliced
    out = copy_2d(x)
    print("contiguous:", out.is_contiguous(), " matches:", torch.equal(out, x))
