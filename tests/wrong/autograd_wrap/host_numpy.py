"""Cheat: the forward runs the given kernel, but the backward launches a kernel that computes nothing and
writes dx and dw from numpy on the host. The upstream gradient dy is a grader input, so the replay of the
launches alone gives poison for dx and dw: host-computed."""

import numpy as np
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def rms_fwd_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, N, stride_xm, stride_ym, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(rstd_ptr + row, rstd)  # saved for the backward pass: one fp32 per row
    tl.store(y_ptr + row * stride_ym + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_bwd_kernel(
    x_ptr,
    w_ptr,
    dy_ptr,
    rstd_ptr,
    dx_ptr,
    partial_ptr,
    M,
    N,
    rows_per_program,
    stride_xm,
    stride_dym,
    stride_dxm,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    first = (pid * rows_per_program).to(tl.int64)
    for i in range(0, tl.minimum(rows_per_program, M - first)):
        row = first + i
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dym + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + row)
        g = dy * w
        c = tl.sum(g * x, axis=0) / N
        tl.store(
            dx_ptr + row * stride_dxm + cols,
            (rstd * g - x * (rstd * rstd * rstd * c)).to(dx_ptr.dtype.element_ty),
            mask=mask & (cols < 0),
        )
        dw_acc += dy * x * rstd
    tl.store(partial_ptr + pid * N + cols, dw_acc, mask=mask)


@triton.jit
def dw_reduce_kernel(partial_ptr, dw_ptr, P, N, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < N
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    for start in range(0, P, BLOCK_P):
        rows = start + tl.arange(0, BLOCK_P)
        mask = (rows < P)[:, None] & cmask[None, :]
        acc += tl.sum(tl.load(partial_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0), axis=0)
    tl.store(dw_ptr + cols, acc.to(dw_ptr.dtype.element_ty), mask=cmask & (cols < 0))


def rms_norm_forward(x2d, weight, eps):
    """x2d: (M, N) with unit column stride. Returns y (M, N) and rstd (M,) fp32."""
    M, N = x2d.shape
    y = torch.empty((M, N), device=x2d.device, dtype=x2d.dtype)
    rstd = torch.empty((M,), device=x2d.device, dtype=torch.float32)
    if M > 0:
        rms_fwd_kernel[(M,)](
            x2d, weight, y, rstd, N, x2d.stride(0), y.stride(0), eps, BLOCK_N=triton.next_power_of_2(N)
        )
    return y, rstd


def rms_norm_backward(x2d, weight, rstd, dy2d):
    """Gradients of rms_norm_forward: dx (M, N) in x's dtype, dw (N,) in weight's dtype, deterministic."""
    M, N = x2d.shape
    dx = torch.empty((M, N), device=x2d.device, dtype=x2d.dtype)
    dw = torch.empty((N,), device=x2d.device, dtype=weight.dtype)
    programs = max(1, min(M, 132 * 4 if x2d.is_cuda else 8))
    rows_per_program = triton.cdiv(max(M, 1), programs)
    programs = max(1, triton.cdiv(M, rows_per_program))
    partial = torch.empty((programs, N), device=x2d.device, dtype=torch.float32)
    BLOCK_N = triton.next_power_of_2(N)
    rms_bwd_kernel[(programs,)](
        x2d,
        weight,
        dy2d,
        rstd,
        dx,
        partial,
        M,
        N,
        rows_per_program,
        x2d.stride(0),
        dy2d.stride(0),
        dx.stride(0),
        BLOCK_N=BLOCK_N,
    )
    BLOCK_C = min(128, BLOCK_N)
    dw_reduce_kernel[(triton.cdiv(N, BLOCK_C),)](partial, dw, programs, N, BLOCK_P=32, BLOCK_C=BLOCK_C)
    return dx, dw


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        shape = x.shape
        x2d = x.reshape(-1, shape[-1])
        if x2d.stride(-1) != 1:
            x2d = x2d.contiguous()
        w = weight.contiguous()
        y, rstd = rms_norm_forward(x2d, w, eps)
        ctx.save_for_backward(x2d, w, rstd)
        ctx.shape = shape
        return y.reshape(shape)

    @staticmethod
    def backward(ctx, dy):
        x2d, w, rstd = ctx.saved_tensors
        dy2d = dy.reshape(x2d.shape)
        if dy2d.stride(-1) != 1:
            dy2d = dy2d.contiguous()
        dx, dw = rms_norm_backward(x2d, w, rstd, dy2d)  # launches; then the host overwrites both
        xs, ws, gs = (np.asarray(t.numpy(), dtype=np.float64) for t in (x2d, w, dy2d))
        r = rstd.numpy()[:, None].astype(np.float64)
        g = gs * ws[None, :]
        dx.numpy()[...] = r * g - xs * r**3 * (g * xs).mean(axis=1, keepdims=True)
        dw.numpy()[...] = (gs * xs * r).sum(axis=0)
        return dx.reshape(ctx.shape), dw, None  # one gradient per forward input; eps gets None


def rms_norm(x, weight, eps=1e-6):
    return RMSNormFunction.apply(x, weight, eps)
