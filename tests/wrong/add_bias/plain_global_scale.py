"""Wrong on a GPU: the bias is scaled by `BIAS_SCALE`, a plain module-level float that Triton does not compile
into a kernel (only `tl.constexpr` globals). Right on the interpreter, which runs the kernel body as Python:
the replay's lowering for sm_90 fails it as `does-not-compile`."""

import torch
import triton
import triton.language as tl

BIAS_SCALE = 1.0


@triton.jit
def bias_rows(x, bias, out, N, sx0, sx1, so0, so1, BLOCK_N: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK_N)
    m = c < N
    v = tl.load(x + r * sx0 + c * sx1, mask=m) + tl.load(bias + c, mask=m) * BIAS_SCALE
    tl.store(out + r * so0 + c * so1, v.to(out.dtype.element_ty), mask=m)


def add_bias(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    bias = bias.contiguous()
    out = torch.empty_like(x)
    M, N = x.shape
    bias_rows[(M,)](
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
