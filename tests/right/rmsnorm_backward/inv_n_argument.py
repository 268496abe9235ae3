"""Right: the course's two kernels, with 1/N computed on the host and passed as a float (`inv_n`) beside eps.
A simple function of a size is a value the host may pass: the replay takes it (issue 33)."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def rms_norm_bwd_kernel(
    x_ptr,
    w_ptr,
    dy_ptr,
    dx_ptr,
    partial_ptr,
    M,
    N,
    rows_per_program,
    stride_xm,
    stride_xn,
    stride_dym,
    stride_dyn,
    stride_dxm,
    stride_w,
    eps,
    inv_n,
    BLOCK_N: tl.constexpr,
):
    # each program owns a contiguous band of rows: it writes their dx and one row of partial dw sums
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < N
    w = tl.load(w_ptr + cols * stride_w, mask=cmask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    first = (pid * rows_per_program).to(tl.int64)
    for i in range(0, tl.minimum(rows_per_program, M - first)):
        row = first + i
        x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cmask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dym + cols * stride_dyn, mask=cmask, other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) * inv_n + eps)
        g = dy * w
        c = tl.sum(g * x, axis=0) * inv_n
        dx = rstd * g - x * (rstd * rstd * rstd * c)
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=cmask)
        dw_acc += dy * x * rstd
    tl.store(partial_ptr + pid * N + cols, dw_acc, mask=cmask)


@triton.jit
def dw_reduce_kernel(partial_ptr, dw_ptr, P, N, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    # one program per block of columns sums the P partial rows in a fixed order: deterministic
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < N
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    for start in range(0, P, BLOCK_P):
        rows = start + tl.arange(0, BLOCK_P)
        mask = (rows < P)[:, None] & cmask[None, :]
        part = tl.load(partial_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(part, axis=0)
    tl.store(dw_ptr + cols, acc.to(dw_ptr.dtype.element_ty), mask=cmask)


def rms_norm_backward(x, weight, dy, eps=1e-6):
    assert x.ndim == 2 and dy.shape == x.shape and weight.shape == (x.shape[1],)
    M, N = x.shape
    dx = torch.empty((M, N), device=x.device, dtype=x.dtype)
    dw = torch.empty((N,), device=x.device, dtype=weight.dtype)
    if M == 0 or N == 0:
        return dx, dw
    programs = min(M, 132 * 4 if x.is_cuda else 8)
    rows_per_program = triton.cdiv(M, programs)
    programs = triton.cdiv(M, rows_per_program)
    partial = torch.empty((programs, N), device=x.device, dtype=torch.float32)
    BLOCK_N = triton.next_power_of_2(N)
    rms_norm_bwd_kernel[(programs,)](
        x,
        weight,
        dy,
        dx,
        partial,
        M,
        N,
        rows_per_program,
        x.stride(0),
        x.stride(1),
        dy.stride(0),
        dy.stride(1),
        dx.stride(0),
        weight.stride(0),
        eps,
        1.0 / N,
        BLOCK_N=BLOCK_N,
        num_warps=4 if BLOCK_N <= 2048 else 8,
    )
    BLOCK_C = min(128, BLOCK_N)
    dw_reduce_kernel[(triton.cdiv(N, BLOCK_C),)](partial, dw, programs, N, BLOCK_P=32, BLOCK_C=BLOCK_C)
    return dx, dw
