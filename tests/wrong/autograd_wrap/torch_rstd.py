"""Host-computed: a torch.library.custom_op whose backward recomputes rstd with torch on the host and hands it
to the backward kernel. A launch may read inputs, views and fresh allocations only; a tensor torch computed is
host work the replay cannot redo (issue 16). tests/right/autograd_wrap/custom_op.py saves the kernel's rstd."""

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
            mask=mask,
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
    tl.store(dw_ptr + cols, acc.to(dw_ptr.dtype.element_ty), mask=cmask)


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


@torch.library.custom_op("tritonlab_test::rms_norm_op", mutates_args=())
def rms_norm_op(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x2d = x.reshape(-1, x.shape[-1])
    if x2d.stride(-1) != 1:
        x2d = x2d.contiguous()
    y, _rstd = rms_norm_forward(x2d, weight.contiguous(), eps)
    return y.reshape(x.shape)


@rms_norm_op.register_fake
def _(x, weight, eps):
    return torch.empty_like(x)


def _setup(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _backward(ctx, dy):
    x, weight = ctx.saved_tensors
    x2d = x.reshape(-1, x.shape[-1]).contiguous()
    xf = x2d.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1) + ctx.eps)
    dx, dw = rms_norm_backward(x2d, weight.contiguous(), rstd, dy.reshape(x2d.shape).contiguous())
    return dx.reshape(x.shape), dw, None


rms_norm_op.register_autograd(_backward, setup_context=_setup)


def rms_norm(x, weight, eps=1e-6):
    return rms_norm_op(x, weight, eps)
