"""Cheat: a kernel launches and computes nothing; the host computes dx and dw in numpy and writes them into the
outputs (the op recorder does not see numpy). Only the launch replay catches it: host-computed."""

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def nothing_kernel(dx_ptr, dw_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dx_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < 0)  # every lane masked off
    tl.store(dw_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < 0)


def rms_norm_backward(x, weight, dy, eps=1e-6):
    M, N = x.shape
    dx = torch.empty((M, N), dtype=x.dtype, device=x.device)
    dw = torch.empty((N,), dtype=weight.dtype, device=x.device)
    nothing_kernel[(1,)](dx, dw, M * N, BLOCK=16)
    xs, ws, gs = (np.asarray(t.numpy(), dtype=np.float64) for t in (x, weight, dy))
    rstd = 1.0 / np.sqrt((xs * xs).mean(axis=1, keepdims=True) + eps)
    g = gs * ws[None, :]
    dx.numpy()[...] = rstd * g - xs * rstd**3 * (g * xs).mean(axis=1, keepdims=True)
    dw.numpy()[...] = (gs * xs * rstd).sum(axis=0)
    return dx, dw
