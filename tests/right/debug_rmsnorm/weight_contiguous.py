"""Right: `weight = weight.contiguous()` on the host (this exercise allows it for weight only), one block a row."""

import torch
import triton
import triton.language as tl


@triton.jit
def rms_kernel(x_ptr, w_ptr, y_ptr, N, sx, sxn, sw, sy, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * sx + cols * sxn, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols * sw, mask=mask, other=0.0).to(tl.float32)
    ms = tl.sum(x * x, axis=0) / N
    y = x * tl.rsqrt(ms + eps) * w
    tl.store(y_ptr + row * sy + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm(x, weight, eps=1e-6):
    weight = weight.contiguous()
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    rms_kernel[(M,)](
        x,
        weight,
        y,
        N,
        x.stride(0),
        x.stride(1),
        weight.stride(0),
        y.stride(0),
        eps,
        BLOCK=triton.next_power_of_2(N),
    )
    return y
