"""LayerNorm forward and backward in Triton, made trainable with torch.autograd.Function.

Run: TRITON_INTERPRET=1 python examples/layernorm_training.py (or on a GPU without the variable). It checks the
backward against torch autograd in float64 on an odd shape (fp32 and fp16), runs torch.autograd.gradcheck on the
Function in float64, and shows that the atomic variant of the weight gradients gives the same values.
The other examples of this lesson import the kernels and the Function from this file.
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def ln_fwd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, N, stride_xm, stride_ym, eps,
                  BLOCK_N: tl.constexpr, FP64: tl.constexpr):
    ACC = tl.float64 if FP64 else tl.float32         # the dtype of the arithmetic
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(ACC)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)               # padded lanes would add mean² each to the variance
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(ACC)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * stride_ym + cols, (xc * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def ln_bwd_kernel(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr, M, N,
                  rows_per_program, stride_xm, stride_dym, stride_dxm, BLOCK_N: tl.constexpr, FP64: tl.constexpr):
    ACC = tl.float64 if FP64 else tl.float32
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    dw_acc = tl.zeros([BLOCK_N], dtype=ACC)          # this program's shares of dγ and dβ, in registers
    db_acc = tl.zeros([BLOCK_N], dtype=ACC)
    first = (pid * rows_per_program).to(tl.int64)
    for i in range(0, tl.minimum(rows_per_program, M - first)):
        row = first + i
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(ACC)
        dy = tl.load(dy_ptr + row * stride_dym + cols, mask=mask, other=0.0).to(ACC)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        g = dy * w                                   # the gradient that reaches x̂ (0 on padded lanes)
        mean_g = tl.sum(g, axis=0) / N               # the path through the mean
        mean_gx = tl.sum(g * xhat, axis=0) / N       # the path through the variance
        dx = rstd * (g - mean_g - xhat * mean_gx)
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw_acc += dy * xhat
        db_acc += dy
    tl.store(dw_part_ptr + pid * N + cols, dw_acc, mask=mask)          # one row of partial sums per program
    tl.store(db_part_ptr + pid * N + cols, db_acc, mask=mask)


@triton.jit
def sum_rows_kernel(part_ptr, out_ptr, P, N, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
                    FP64: tl.constexpr):
    ACC = tl.float64 if FP64 else tl.float32
    which = tl.program_id(1)                         # 0: dγ, 1: dβ
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < N
    acc = tl.zeros([BLOCK_C], dtype=ACC)
    for start in range(0, P, BLOCK_P):               # always the same order: deterministic
        rows = start + tl.arange(0, BLOCK_P)
        mask = (rows < P)[:, None] & cmask[None, :]
        ptrs = part_ptr + (which * P + rows[:, None]) * N + cols[None, :]
        acc += tl.sum(tl.load(ptrs, mask=mask, other=0.0), axis=0)
    tl.store(out_ptr + which * N + cols, acc.to(out_ptr.dtype.element_ty), mask=cmask)


def layer_norm_fwd(x2d, w, b, eps=1e-5):
    M, N = x2d.shape
    acc = torch.float64 if x2d.dtype == torch.float64 else torch.float32
    y = torch.empty_like(x2d)
    mean = torch.empty(M, device=x2d.device, dtype=acc)
    rstd = torch.empty(M, device=x2d.device, dtype=acc)
    ln_fwd_kernel[(M,)](x2d, w, b, y, mean, rstd, N, x2d.stride(0), y.stride(0), eps,
                        BLOCK_N=triton.next_power_of_2(N), FP64=x2d.dtype == torch.float64)
    return y, mean, rstd


def default_programs(t):
    # a few programs per SM of the GPU that holds t (not GPU 0: the tensor may live elsewhere)
    return 4 * torch.cuda.get_device_properties(t.device).multi_processor_count if t.is_cuda else 4


def layer_norm_bwd(x2d, w, dy2d, mean, rstd, programs=None):
    M, N = x2d.shape
    rows_per_program = triton.cdiv(M, min(M, programs or default_programs(x2d)))
    P = triton.cdiv(M, rows_per_program)
    dx = torch.empty_like(x2d)
    partial = torch.empty((2, P, N), device=x2d.device, dtype=rstd.dtype)   # dγ and dβ shares
    BLOCK_N = triton.next_power_of_2(N)
    ln_bwd_kernel[(P,)](x2d, w, dy2d, mean, rstd, dx, partial[0], partial[1], M, N, rows_per_program,
                        x2d.stride(0), dy2d.stride(0), dx.stride(0), BLOCK_N=BLOCK_N,
                        FP64=x2d.dtype == torch.float64)
    dwdb = torch.empty((2, N), device=x2d.device, dtype=w.dtype)
    BLOCK_C = min(128, BLOCK_N)
    sum_rows_kernel[(triton.cdiv(N, BLOCK_C), 2)](partial, dwdb, P, N, BLOCK_P=16, BLOCK_C=BLOCK_C,
                                                  FP64=x2d.dtype == torch.float64)
    return dx, dwdb[0], dwdb[1]


class TritonLayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        shape = x.shape
        x2d = x.reshape(-1, shape[-1])
        if x2d.stride(-1) != 1:
            x2d = x2d.contiguous()
        w, b = weight.contiguous(), bias.contiguous()
        y, mean, rstd = layer_norm_fwd(x2d, w, b, eps)
        ctx.save_for_backward(x2d, w, mean, rstd)   # tensors: through save_for_backward
        ctx.shape = shape                           # plain Python values: attributes
        return y.reshape(shape)

    @staticmethod
    def backward(ctx, dy):
        x2d, w, mean, rstd = ctx.saved_tensors
        dy2d = dy.reshape(x2d.shape)
        if dy2d.stride(-1) != 1:
            dy2d = dy2d.contiguous()
        dx, dw, db = layer_norm_bwd(x2d, w, dy2d, mean, rstd)
        return dx.reshape(ctx.shape), dw, db, None   # one gradient per input of forward; eps gets None


def triton_layer_norm(x, weight, bias, eps=1e-5):
    return TritonLayerNorm.apply(x, weight, bias, eps)


@triton.jit
def ln_bwd_atomic_kernel(x_ptr, w_ptr, dy_ptr, mean_ptr, rstd_ptr, dx_ptr, dw32_ptr, db32_ptr, M, N,
                         rows_per_program, stride_xm, stride_dym, stride_dxm, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    db_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    first = (pid * rows_per_program).to(tl.int64)
    for i in range(0, tl.minimum(rows_per_program, M - first)):
        row = first + i
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dym + cols, mask=mask, other=0.0).to(tl.float32)
        xhat = tl.where(mask, (x - tl.load(mean_ptr + row)) * tl.load(rstd_ptr + row), 0.0)
        g = dy * w
        dx = tl.load(rstd_ptr + row) * (g - tl.sum(g, axis=0) / N - xhat * (tl.sum(g * xhat, axis=0) / N))
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw_acc += dy * xhat
        db_acc += dy
    tl.atomic_add(dw32_ptr + cols, dw_acc, mask=mask)     # the order of arrival decides the rounding
    tl.atomic_add(db32_ptr + cols, db_acc, mask=mask)


def layer_norm_bwd_atomic(x2d, w, dy2d, mean, rstd, programs=4):
    M, N = x2d.shape
    rows_per_program = triton.cdiv(M, min(M, programs))
    dx = torch.empty_like(x2d)
    dwdb32 = torch.zeros((2, N), device=x2d.device, dtype=torch.float32)    # must start at zero
    ln_bwd_atomic_kernel[(triton.cdiv(M, rows_per_program),)](
        x2d, w, dy2d, mean, rstd, dx, dwdb32[0], dwdb32[1], M, N, rows_per_program,
        x2d.stride(0), dy2d.stride(0), dx.stride(0), BLOCK_N=triton.next_power_of_2(N))
    return dx, dwdb32[0].to(w.dtype), dwdb32[1].to(w.dtype)


def compare_with_torch():
    """Gradients of the Triton kernels against torch autograd in float64 on 67 rows of 37 columns."""
    for dtype in (torch.float32, torch.float16):
        x = torch.randn(67, 37, device=DEVICE).to(dtype)
        w = (1 + 0.1 * torch.randn(37, device=DEVICE)).to(dtype)
        b = (0.1 * torch.randn(37, device=DEVICE)).to(dtype)
        dy = torch.randn(67, 37, device=DEVICE).to(dtype)
        _, mean, rstd = layer_norm_fwd(x, w, b)
        dx, dw, db = layer_norm_bwd(x, w, dy, mean, rstd)
        xr, wr, br = (t.double().requires_grad_() for t in (x, w, b))
        torch.nn.functional.layer_norm(xr, (37,), wr, br, 1e-5).backward(dy.double())
        errs = [((ours.double() - ref.grad).abs().max() / ref.grad.abs().max()).item()
                for ours, ref in ((dx, xr), (dw, wr), (db, br))]
        print(f"{str(dtype):14s} relative error: dx {errs[0]:.1e}, dγ {errs[1]:.1e}, dβ {errs[2]:.1e}")
        assert max(errs) < 3e-3


def check_gradcheck():
    x = torch.randn(2, 2, 5, device=DEVICE, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, device=DEVICE, dtype=torch.float64, requires_grad=True)
    b = torch.randn(5, device=DEVICE, dtype=torch.float64, requires_grad=True)
    ok = torch.autograd.gradcheck(lambda a, c, d: triton_layer_norm(a, c, d, 1e-3), (x, w, b))
    print("gradcheck (float64):", ok)


def compare_atomic():
    x = torch.randn(200, 48, device=DEVICE)
    w = torch.randn(48, device=DEVICE)
    b = torch.randn(48, device=DEVICE)
    dy = torch.randn(200, 48, device=DEVICE)
    _, mean, rstd = layer_norm_fwd(x, w, b)
    runs = [layer_norm_bwd_atomic(x, w, dy, mean, rstd, programs=16)[1] for _ in range(2)]
    det = [layer_norm_bwd(x, w, dy, mean, rstd, programs=16)[1] for _ in range(2)]
    print("atomic: same bits twice?", torch.equal(runs[0], runs[1]), "| partial sums: same bits twice?",
          torch.equal(det[0], det[1]))
    print("atomic vs partial sums, max difference:", (runs[0] - det[0]).abs().max().item())


if __name__ == "__main__":
    torch.manual_seed(0)
    compare_with_torch()
    check_gradcheck()
    compare_atomic()
