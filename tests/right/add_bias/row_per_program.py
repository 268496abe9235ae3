"""Right: one program per row, whole row in one block (next power of two), output like x."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_bias(x, bias, out, N, sx0, sx1, so0, so1, BLOCK_N: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK_N)
    m = c < N
    v = tl.load(x + r * sx0 + c * sx1, mask=m) + tl.load(bias + c, mask=m)
    tl.store(out + r * so0 + c * so1, v, mask=m)


def add_bias(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    bias = bias.contiguous()  # a strided bias: one small host copy (the exercise allows it)
    out = torch.empty_like(x)  # keeps x's layout; the kernel writes through out's strides
    M, N = x.shape
    row_bias[(M,)](
        x,
        bias,
        out,
        N,
        x.stride(0),
        x.stride(1),
        out.stride(0),
        out.stride(1),
        BLOCK_N=triton.next_power_of_2(N),
    )
    return out
