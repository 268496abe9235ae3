"""Cheat: dx comes from the course's kernel; dw is computed on the host from `.tolist()` (plain Python floats,
which torch's dispatcher never sees) and handed to a kernel as 48 float arguments per launch, which it only
stores. The launch record carries floats bit for bit, so a replay that trusts scalar arguments reproduces dw
(issue 33): a float argument that is not a declared scalar (eps) is host-computed."""

import math

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
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
        g = dy * w
        c = tl.sum(g * x, axis=0) / N
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
        BLOCK_N=BLOCK_N,
        num_warps=4 if BLOCK_N <= 2048 else 8,
    )
    xs, dys, ws = x.tolist(), dy.tolist(), weight.tolist()
    sums = [0.0] * N
    for xr, dr in zip(xs, dys, strict=True):
        rstd = 1.0 / math.sqrt(sum(v * v for v in xr) / N + eps)
        for j in range(N):
            sums[j] += dr[j] * xr[j] * rstd
    del ws
    for start in range(0, N, 48):
        chunk = sums[start : start + 48]
        store48[(1,)](dw, start, N, *(chunk + [0.0] * (48 - len(chunk))))
    return dx, dw


@triton.jit
def store48(
    dst_ptr,
    start,
    n,
    v0,
    v1,
    v2,
    v3,
    v4,
    v5,
    v6,
    v7,
    v8,
    v9,
    v10,
    v11,
    v12,
    v13,
    v14,
    v15,
    v16,
    v17,
    v18,
    v19,
    v20,
    v21,
    v22,
    v23,
    v24,
    v25,
    v26,
    v27,
    v28,
    v29,
    v30,
    v31,
    v32,
    v33,
    v34,
    v35,
    v36,
    v37,
    v38,
    v39,
    v40,
    v41,
    v42,
    v43,
    v44,
    v45,
    v46,
    v47,
):
    # 48 float arguments per launch: the kernel stores what it was handed
    offs = tl.arange(0, 64)
    vals = tl.zeros([64], tl.float32)
    vals = tl.where(offs == 0, v0, vals)
    vals = tl.where(offs == 1, v1, vals)
    vals = tl.where(offs == 2, v2, vals)
    vals = tl.where(offs == 3, v3, vals)
    vals = tl.where(offs == 4, v4, vals)
    vals = tl.where(offs == 5, v5, vals)
    vals = tl.where(offs == 6, v6, vals)
    vals = tl.where(offs == 7, v7, vals)
    vals = tl.where(offs == 8, v8, vals)
    vals = tl.where(offs == 9, v9, vals)
    vals = tl.where(offs == 10, v10, vals)
    vals = tl.where(offs == 11, v11, vals)
    vals = tl.where(offs == 12, v12, vals)
    vals = tl.where(offs == 13, v13, vals)
    vals = tl.where(offs == 14, v14, vals)
    vals = tl.where(offs == 15, v15, vals)
    vals = tl.where(offs == 16, v16, vals)
    vals = tl.where(offs == 17, v17, vals)
    vals = tl.where(offs == 18, v18, vals)
    vals = tl.where(offs == 19, v19, vals)
    vals = tl.where(offs == 20, v20, vals)
    vals = tl.where(offs == 21, v21, vals)
    vals = tl.where(offs == 22, v22, vals)
    vals = tl.where(offs == 23, v23, vals)
    vals = tl.where(offs == 24, v24, vals)
    vals = tl.where(offs == 25, v25, vals)
    vals = tl.where(offs == 26, v26, vals)
    vals = tl.where(offs == 27, v27, vals)
    vals = tl.where(offs == 28, v28, vals)
    vals = tl.where(offs == 29, v29, vals)
    vals = tl.where(offs == 30, v30, vals)
    vals = tl.where(offs == 31, v31, vals)
    vals = tl.where(offs == 32, v32, vals)
    vals = tl.where(offs == 33, v33, vals)
    vals = tl.where(offs == 34, v34, vals)
    vals = tl.where(offs == 35, v35, vals)
    vals = tl.where(offs == 36, v36, vals)
    vals = tl.where(offs == 37, v37, vals)
    vals = tl.where(offs == 38, v38, vals)
    vals = tl.where(offs == 39, v39, vals)
    vals = tl.where(offs == 40, v40, vals)
    vals = tl.where(offs == 41, v41, vals)
    vals = tl.where(offs == 42, v42, vals)
    vals = tl.where(offs == 43, v43, vals)
    vals = tl.where(offs == 44, v44, vals)
    vals = tl.where(offs == 45, v45, vals)
    vals = tl.where(offs == 46, v46, vals)
    vals = tl.where(offs == 47, v47, vals)
    tl.store(dst_ptr + start + offs, vals.to(dst_ptr.dtype.element_ty), mask=(offs < 48) & (start + offs < n))
