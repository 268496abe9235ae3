"""Wrong: the second load has no mask. The masked store throws the tail lanes away, so every output element is
right, but the last program reads past the end of `y` (on a GPU that can be an illegal memory access)."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    a = tl.load(x_ptr + offs, mask=inside)
    b = tl.load(y_ptr + offs)
    if a.dtype.is_fp16() or a.dtype.is_bf16():
        total = (a.to(tl.float32) + b.to(tl.float32)).to(a.dtype)
    else:
        total = a + b
    tl.store(out_ptr + offs, total, mask=inside)


def vector_add(x, y):
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(f"x and y differ: {x.shape}/{x.dtype}/{x.device} vs {y.shape}/{y.dtype}/{y.device}")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    if n:
        add_kernel[(triton.cdiv(n, 512),)](x.contiguous(), y.contiguous(), out, n, BLOCK=512)
    return out
