"""Right: the output starts as zeros (`torch.zeros_like`, then `zero_()` once more for good measure) before the
kernel writes it. Zero-initialising a whole allocation is allowed by every exercise: zero says nothing about
the inputs, so the replay takes it (issue 33)."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def vector_add(x, y):
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(f"x and y differ: {x.shape}/{x.dtype}/{x.device} vs {y.shape}/{y.dtype}/{y.device}")
    x, y = x.contiguous(), y.contiguous()
    out = torch.zeros_like(x)
    out.zero_()
    n = x.numel()
    if n:
        add_kernel[(triton.cdiv(n, 512),)](x, y, out, n, BLOCK=512)
    return out
