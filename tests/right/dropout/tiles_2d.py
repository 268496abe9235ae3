"""Right: a 2-D grid of tiles; the counter of element (r, c) is offset + r·N + c, built from the tile's rows
and columns."""

import torch
import triton
import triton.language as tl


@triton.jit
def fwd_kernel(
    x_ptr, res_ptr, y_ptr, M, N, sxr, sxc, srr, src, p, seed, offset, BM: tl.constexpr, BN: tl.constexpr
):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ok = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * sxr + cols[None, :] * sxc, mask=ok, other=0.0).to(tl.float32)
    res = tl.load(res_ptr + rows[:, None] * srr + cols[None, :] * src, mask=ok, other=0.0).to(tl.float32)
    u = tl.rand(seed, offset + rows[:, None] * N + cols[None, :])
    y = tl.where(u >= p, res + x / (1.0 - p), res)
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=ok)


@triton.jit
def bwd_kernel(g_ptr, dx_ptr, M, N, sgr, sgc, p, seed, offset, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    ok = (rows[:, None] < M) & (cols[None, :] < N)
    g = tl.load(g_ptr + rows[:, None] * sgr + cols[None, :] * sgc, mask=ok, other=0.0).to(tl.float32)
    u = tl.rand(seed, offset + rows[:, None] * N + cols[None, :])
    dx = tl.where(u >= p, g / (1.0 - p), 0.0)
    tl.store(dx_ptr + rows[:, None] * N + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=ok)


def _grid(M, N):
    return (triton.cdiv(M, 32), triton.cdiv(N, 64))


def _valid(p):
    if p < 0 or p >= 1:
        raise ValueError("p must satisfy 0 <= p < 1")


def dropout_add(x, residual, p, seed, offset=0):
    _valid(p)
    M, N = x.shape
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if M * N:
        fwd_kernel[_grid(M, N)](
            x, residual, y, M, N, *x.stride(), *residual.stride(), p, seed, offset, BM=32, BN=64
        )
    return y


def dropout_add_backward(grad, p, seed, offset=0):
    _valid(p)
    M, N = grad.shape
    dx = torch.empty((M, N), device=grad.device, dtype=grad.dtype)
    if M * N:
        bwd_kernel[_grid(M, N)](grad, dx, M, N, *grad.stride(), p, seed, offset, BM=32, BN=64)
    return dx
