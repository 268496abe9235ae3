"""Wrong on a GPU: the kernel reads `ONE`, a plain module-level float. Triton compiles only `tl.constexpr`
globals into a kernel; the interpreter runs the body as Python and finds the name, so every value is right
there. The replay lowers each launched kernel for sm_90: it fails as `does-not-compile`, not as the host's
doing."""

import torch
import triton
import triton.language as tl

ONE = 1.0


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * ONE + y, mask=mask)


def vector_add(x, y):
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(f"x and y differ: {x.shape}/{x.dtype}/{x.device} vs {y.shape}/{y.dtype}/{y.device}")
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out
