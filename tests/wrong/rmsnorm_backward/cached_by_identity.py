"""Wrong: the partial-sum buffer is kept between calls and never cleared (a second call returns dw plus the
first call's dw), and the results are cached by input identity: a call on the very same tensor objects
returns the first call's answer without launching anything. A repeat made on the same objects sees equal bits;
one made on fresh tensors with equal values shows the stale state."""

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
    before = tl.load(partial_ptr + pid * N + cols, mask=cmask, other=0.0)
    tl.store(partial_ptr + pid * N + cols, before + dw_acc, mask=cmask)


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


_PARTIALS = {}


def _backward(x, weight, dy, eps):
    assert x.ndim == 2 and dy.shape == x.shape and weight.shape == (x.shape[1],)
    M, N = x.shape
    dx = torch.empty((M, N), device=x.device, dtype=x.dtype)
    dw = torch.empty((N,), device=x.device, dtype=weight.dtype)
    if M == 0 or N == 0:
        return dx, dw
    programs = min(M, 132 * 4 if x.is_cuda else 8)
    rows_per_program = triton.cdiv(M, programs)
    programs = triton.cdiv(M, rows_per_program)
    key = (programs, N, x.device)
    if key not in _PARTIALS:  # made once, zeroed once: the bug is that it is never cleared again
        _PARTIALS[key] = torch.zeros((programs, N), device=x.device, dtype=torch.float32)
    partial = _PARTIALS[key]
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
    BLOCK_C = min(128, BLOCK_N)
    dw_reduce_kernel[(triton.cdiv(N, BLOCK_C),)](partial, dw, programs, N, BLOCK_P=32, BLOCK_C=BLOCK_C)
    return dx, dw


_SEEN = {}  # id of each input -> (the inputs, kept alive so that no id is reused; the result)


def rms_norm_backward(x, weight, dy, eps=1e-6):
    key = (id(x), id(weight), id(dy), eps)
    if key in _SEEN:
        return _SEEN[key][1]
    result = _backward(x, weight, dy, eps)
    _SEEN[key] = ((x, weight, dy), result)
    return result
