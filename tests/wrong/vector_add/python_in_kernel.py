"""Cheat: Python on the interpreter's numpy arrays inside the kernel body, with no `np` to spot. The
interpreter runs a kernel body as Python, so it works there; on a GPU it does not compile. The replay lowers
every launched kernel to TTIR for sm_90: refused."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    x.handle.data[...] = x.handle.data + y.handle.data
    tl.store(out_ptr + offs, x, mask=mask)


def vector_add(x, y):
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(f"x and y differ: {x.shape}/{x.dtype}/{x.device} vs {y.shape}/{y.dtype}/{y.device}")
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out
