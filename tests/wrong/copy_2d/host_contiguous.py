"""Wrong: `x.contiguous()` on the host does the strided read the kernel should do; the kernel copies flat."""

import torch
import triton
import triton.language as tl


@triton.jit
def flat_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def copy_2d(x):
    x = x.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        flat_copy[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y
