"""Exercise add-bias: out[i, j] = x[i, j] + bias[j].

add_bias(x, bias) -> a new contiguous (M, N) tensor with x's dtype.
x: (M, N), any strides.  bias: (N,), possibly a strided view.

Check it with:  tritonlab check add-bias
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def add_bias_kernel(x_ptr, bias_ptr, out_ptr, M, N,
                    stride_xm, stride_xn, stride_b, stride_om, stride_on,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # cost model: reads M·N + N, writes M·N elements -> bytes ≈ 2·M·N·size
    # TODO: which tile is this program's? Read its coordinates along the two axes of the grid.
    # TODO: row/column offsets and the 2-D mask.
    # TODO: load the x tile through x's strides.
    # TODO: load this program's BLOCK_N bias values (1-D, masked) and broadcast them over the rows.
    # TODO: add in fp32, convert to the output dtype, store through out's strides.
    pass


def add_bias(x, bias, BLOCK_M=32, BLOCK_N=32):
    assert x.ndim == 2 and bias.ndim == 1 and bias.shape[0] == x.shape[1]
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out
    # TODO: the 2-D grid: how many programs along each axis, so that every BLOCK_M × BLOCK_N tile of the
    #       output gets exactly one program, in the axis order your kernel reads with tl.program_id.
    grid = (1, 1)
    add_bias_kernel[grid](x, bias, out, M, N,
                          x.stride(0), x.stride(1), bias.stride(0), out.stride(0), out.stride(1),
                          BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out


if __name__ == "__main__":
    x = torch.randn(45, 33, device=DEVICE).t()
    bias = torch.randn(90, device=DEVICE)[::2]
    out = add_bias(x, bias)
    print("matches:", torch.allclose(out, x + bias))
