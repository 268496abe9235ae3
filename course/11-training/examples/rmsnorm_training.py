"""RMSNorm forward and backward in Triton: checked against torch autograd, the atomic variant, gradcheck.

Run: TRITON_INTERPRET=1 python examples/rmsnorm_training.py (or on a GPU without the variable).
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def acc_dtype(t):
    return tl.float64 if t.dtype == torch.float64 else tl.float32


@triton.jit
def rms_fwd_kernel(
    x_ptr, w_ptr, y_ptr, rstd_ptr, N, stride_xm, stride_ym, eps, BLOCK_N: tl.constexpr, ACC: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(ACC)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(rstd_ptr + row, rstd)
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
    ACC: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    dw_acc = tl.zeros([BLOCK_N], dtype=ACC)  # this program's share of dw, kept in registers
    first = (pid * rows_per_program).to(tl.int64)
    for i in range(0, tl.minimum(rows_per_program, M - first)):
        row = first + i
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(ACC)
        dy = tl.load(dy_ptr + row * stride_dym + cols, mask=mask, other=0.0).to(ACC)
        rstd = tl.load(rstd_ptr + row)
        g = dy * w
        c = tl.sum(g * x, axis=0) / N
        dx = rstd * g - x * (rstd * rstd * rstd * c)
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw_acc += dy * x * rstd
    tl.store(partial_ptr + pid * N + cols, dw_acc, mask=mask)  # one row of partial sums per program


@triton.jit
def sum_rows_kernel(
    partial_ptr, out_ptr, P, N, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr, ACC: tl.constexpr
):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < N
    acc = tl.zeros([BLOCK_C], dtype=ACC)
    for start in range(0, P, BLOCK_P):  # always the same order: deterministic
        rows = start + tl.arange(0, BLOCK_P)
        mask = (rows < P)[:, None] & cmask[None, :]
        acc += tl.sum(tl.load(partial_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0), axis=0)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=cmask)


def rms_norm_fwd(x2d, w, eps=1e-6):
    M, N = x2d.shape
    acc = torch.float64 if x2d.dtype == torch.float64 else torch.float32
    y = torch.empty_like(x2d)
    rstd = torch.empty(M, device=x2d.device, dtype=acc)
    rms_fwd_kernel[(M,)](
        x2d,
        w,
        y,
        rstd,
        N,
        x2d.stride(0),
        y.stride(0),
        eps,
        BLOCK_N=triton.next_power_of_2(N),
        ACC=acc_dtype(x2d),
    )
    return y, rstd


def rms_norm_bwd(x2d, w, rstd, dy2d, programs=None):
    M, N = x2d.shape
    if programs is None:
        programs = 4 * torch.cuda.get_device_properties(0).multi_processor_count if x2d.is_cuda else 4
    rows_per_program = triton.cdiv(M, min(M, programs))
    P = triton.cdiv(M, rows_per_program)
    dx = torch.empty_like(x2d)
    dw = torch.empty_like(w)
    partial = torch.empty((P, N), device=x2d.device, dtype=rstd.dtype)
    BLOCK_N = triton.next_power_of_2(N)
    rms_bwd_kernel[(P,)](
        x2d,
        w,
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
        ACC=acc_dtype(x2d),
    )
    BLOCK_C = min(128, BLOCK_N)
    sum_rows_kernel[(triton.cdiv(N, BLOCK_C),)](
        partial, dw, P, N, BLOCK_P=16, BLOCK_C=BLOCK_C, ACC=acc_dtype(x2d)
    )
    return dx, dw


def torch_rms(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


for dtype in (torch.float32, torch.float16):
    x = torch.randn(67, 37, device=DEVICE).to(dtype)
    w = (1 + 0.1 * torch.randn(37, device=DEVICE)).to(dtype)
    dy = torch.randn(67, 37, device=DEVICE).to(dtype)
    y, rstd = rms_norm_fwd(x, w)
    dx, dw = rms_norm_bwd(x, w, rstd, dy)
    xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
    torch_rms(xr, wr).backward(dy.double())
    err_dx = ((dx.double() - xr.grad).abs().max() / xr.grad.abs().max()).item()
    err_dw = ((dw.double() - wr.grad).abs().max() / wr.grad.abs().max()).item()
    print(f"{str(dtype):14s} relative error: dx {err_dx:.1e}, dw {err_dw:.1e}")
    assert err_dx < 3e-3 and err_dw < 3e-3


@triton.jit
def rms_bwd_atomic_kernel(
    x_ptr,
    w_ptr,
    dy_ptr,
    rstd_ptr,
    dx_ptr,
    dw32_ptr,
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
        dx = rstd * g - x * (rstd * rstd * rstd * (tl.sum(g * x, axis=0) / N))
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw_acc += dy * x * rstd
    tl.atomic_add(dw32_ptr + cols, dw_acc, mask=mask)  # order of arrival decides the rounding


def rms_norm_bwd_atomic(x2d, w, rstd, dy2d, programs=4):
    M, N = x2d.shape
    rows_per_program = triton.cdiv(M, min(M, programs))
    dx = torch.empty_like(x2d)
    dw32 = torch.zeros(N, device=x2d.device, dtype=torch.float32)  # must start at zero
    rms_bwd_atomic_kernel[(triton.cdiv(M, rows_per_program),)](
        x2d,
        w,
        dy2d,
        rstd,
        dx,
        dw32,
        M,
        N,
        rows_per_program,
        x2d.stride(0),
        dy2d.stride(0),
        dx.stride(0),
        BLOCK_N=triton.next_power_of_2(N),
    )
    return dx, dw32.to(w.dtype)


x = torch.randn(200, 48, device=DEVICE)
w = torch.randn(48, device=DEVICE)
dy = torch.randn(200, 48, device=DEVICE)
_, rstd = rms_norm_fwd(x, w)
runs = [rms_norm_bwd_atomic(x, w, rstd, dy, programs=16)[1] for _ in range(2)]
det = [rms_norm_bwd(x, w, rstd, dy, programs=16)[1] for _ in range(2)]
print(
    "atomic: same bits twice?",
    torch.equal(runs[0], runs[1]),
    "| partial sums: same bits twice?",
    torch.equal(det[0], det[1]),
)
print("atomic vs partial sums, max difference:", (runs[0] - det[0]).abs().max().item())


class TritonRMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        shape = x.shape
        x2d = x.reshape(-1, shape[-1])
        if x2d.stride(-1) != 1:
            x2d = x2d.contiguous()
        w = weight.contiguous()
        y, rstd = rms_norm_fwd(x2d, w, eps)
        ctx.save_for_backward(x2d, w, rstd)  # tensors: through save_for_backward
        ctx.shape = shape  # plain Python values: attributes
        return y.reshape(shape)

    @staticmethod
    def backward(ctx, dy):
        x2d, w, rstd = ctx.saved_tensors
        dy2d = dy.reshape(x2d.shape)
        if dy2d.stride(-1) != 1:
            dy2d = dy2d.contiguous()
        dx, dw = rms_norm_bwd(x2d, w, rstd, dy2d)
        return dx.reshape(ctx.shape), dw, None


def triton_rms_norm(x, weight, eps=1e-6):
    return TritonRMSNorm.apply(x, weight, eps)


x = torch.randn(3, 2, 9, device=DEVICE, dtype=torch.float64, requires_grad=True)
w = torch.randn(9, device=DEVICE, dtype=torch.float64, requires_grad=True)
print("gradcheck:", torch.autograd.gradcheck(lambda a, b: triton_rms_norm(a, b, 1e-3), (x, w)))
