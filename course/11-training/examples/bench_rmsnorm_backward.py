"""Benchmark the RMSNorm backward on a GPU (prints a notice and exits 0 on the interpreter).

The reference kernel of the course (tritonlab.perf.kernels.rms_norm_backward) is timed by
`python scripts/bench_gpu.py --only rms_norm_backward`; this script times the lesson's own version.
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


def bench_rms_backward(M=16384, N=4096, dtype=torch.bfloat16):
    x = torch.randn(M, N, device=DEVICE, dtype=dtype)
    w = torch.randn(N, device=DEVICE, dtype=dtype)
    dy = torch.randn(M, N, device=DEVICE, dtype=dtype)
    _, rstd = rms_norm_fwd(x, w)
    ms = triton.testing.do_bench(lambda: rms_norm_bwd(x, w, rstd, dy), return_mode="median")
    xr = x.clone().requires_grad_()
    wr = w.clone().requires_grad_()
    y = torch_rms(xr.float(), wr.float()).to(dtype)
    ms_torch = triton.testing.do_bench(
        lambda: torch.autograd.grad(y, (xr, wr), dy, retain_graph=True), return_mode="median"
    )
    gbps = 3 * M * N * x.element_size() / ms / 1e6
    print(f"RMSNorm backward {M}x{N} {dtype}: {ms:.3f} ms, {gbps:.0f} GB/s; torch autograd {ms_torch:.3f} ms")


if DEVICE == "cuda":
    bench_rms_backward()
else:
    print("The RMSNorm backward benchmark needs a GPU: the interpreter's timings measure NumPy.")
