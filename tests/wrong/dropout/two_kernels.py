"""Wrong: not fused: a dropout kernel writes x·mask/(1-p) to memory, a second kernel adds the residual."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def dropout_add_kernel(
    x_ptr, res_ptr, y_ptr, n, n_cols, sxr, sxc, srr, src, p, seed, offset, BLOCK: tl.constexpr
):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # flat, row-major index of the element
    ok = idx < n
    row = idx // n_cols
    col = idx % n_cols
    x = tl.load(x_ptr + row * sxr + col * sxc, mask=ok, other=0.0).to(tl.float32)
    res = tl.load(res_ptr + row * srr + col * src, mask=ok, other=0.0).to(tl.float32)
    keep = tl.rand(seed, offset + idx) >= p
    y = res + tl.where(keep, x / (1.0 - p), 0.0)
    tl.store(y_ptr + idx, y.to(y_ptr.dtype.element_ty), mask=ok)


@triton.jit
def dropout_backward_kernel(g_ptr, dx_ptr, n, n_cols, sgr, sgc, p, seed, offset, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = idx < n
    g = tl.load(g_ptr + (idx // n_cols) * sgr + (idx % n_cols) * sgc, mask=ok, other=0.0).to(tl.float32)
    keep = tl.rand(seed, offset + idx) >= p  # the same numbers as the forward drew
    tl.store(dx_ptr + idx, tl.where(keep, g / (1.0 - p), 0.0).to(dx_ptr.dtype.element_ty), mask=ok)


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, n_cols, sbr, sbc, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = idx < n
    a = tl.load(a_ptr + idx, mask=ok, other=0.0)
    b = tl.load(b_ptr + (idx // n_cols) * sbr + (idx % n_cols) * sbc, mask=ok, other=0.0)
    tl.store(out_ptr + idx, a + b, mask=ok)


def _check_p(p):
    if not 0.0 <= p < 1.0:
        raise ValueError(f"p = {p} is not a dropout probability: it must be in [0, 1)")


def dropout_add(x, residual, p, seed, offset=0):
    _check_p(p)
    if residual.shape != x.shape or x.dim() != 2:
        raise ValueError("x and residual must be 2-D tensors of the same shape")
    M, N = x.shape
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if y.numel() == 0:
        return y
    BLOCK = 1024
    dropped = dropout_add_backward(x, p, seed, offset)
    add_kernel[(triton.cdiv(M * N, BLOCK),)](dropped, residual, y, M * N, N, *residual.stride(), BLOCK=BLOCK)
    return y
    dropout_add_kernel[(triton.cdiv(M * N, BLOCK),)](
        x, residual, y, M * N, N, *x.stride(), *residual.stride(), p, seed, offset, BLOCK=BLOCK
    )
    return y


def dropout_add_backward(grad, p, seed, offset=0):
    _check_p(p)
    M, N = grad.shape
    dx = torch.empty((M, N), device=grad.device, dtype=grad.dtype)
    if dx.numel() == 0:
        return dx
    BLOCK = 1024
    dropout_backward_kernel[(triton.cdiv(M * N, BLOCK),)](
        grad, dx, M * N, N, *grad.stride(), p, seed, offset, BLOCK=BLOCK
    )
    return dx
