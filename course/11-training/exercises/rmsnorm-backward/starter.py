"""Exercise rmsnorm-backward: the gradients of RMSNorm, dx per row and dw reduced across programs.

The forward (lesson 10), for each row of x (N values):
    rstd = rsqrt(mean(x**2) + eps)      y = x * rstd * weight

rms_norm_backward(x, weight, dy, eps=1e-6) -> (dx, dw): the gradients with respect to x and weight when y
receives the upstream gradient dy (what autograd would put in x.grad and weight.grad after y.backward(dy)).
    x, dy:   (M, N), any strides (the column stride need not be 1), float32 / float16 / bfloat16
    weight:  (N,), the same dtype
    returns  dx: (M, N) in x's dtype, and dw: (N,) in weight's dtype
Derive both yourself, the way lesson 11 derives LayerNorm's (RMSNorm has no mean and no bias), and check the
formulas against torch.autograd in float64 on a small tensor before you write the kernel. Compute in fp32 inside
the kernels; the forward's rstd is not given, so recompute it from x.
dw must be deterministic: two calls on the same inputs return the same bits. So no atomics here: each
program writes one row of partial sums, and a second kernel adds those rows in a fixed order.
The grader also rejects torch arithmetic on the host (no `partial.sum(0)`): the reduction is a kernel too.

Check it with:  tritonlab check rmsnorm-backward
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def rms_norm_bwd_kernel(x_ptr, w_ptr, dy_ptr, dx_ptr, partial_ptr, M, N, rows_per_program,
                        stride_xm, stride_xn, stride_dym, stride_dyn, stride_dxm, stride_w, eps,
                        BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < N
    w = tl.load(w_ptr + cols * stride_w, mask=cmask, other=0.0).to(tl.float32)
    first = (pid * rows_per_program).to(tl.int64)
    for i in range(0, tl.minimum(rows_per_program, M - first)):
        row = first + i
        x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cmask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dym + cols * stride_dyn, mask=cmask, other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
        dx = tl.zeros([BLOCK_N], dtype=tl.float32)  # TODO: this row's dx, from your derivation
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=cmask)
        # TODO: accumulate this row's contribution to dw in an fp32 block
    # TODO: store the accumulated block as row `pid` of partial_ptr (a (programs, N) fp32 buffer)


@triton.jit
def dw_reduce_kernel(partial_ptr, dw_ptr, P, N, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < N
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    # TODO: add the P rows of partial sums for these columns, BLOCK_P rows at a time, in a fixed order
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
    rms_norm_bwd_kernel[(programs,)](x, weight, dy, dx, partial, M, N, rows_per_program,
                                     x.stride(0), x.stride(1), dy.stride(0), dy.stride(1), dx.stride(0),
                                     weight.stride(0), eps, BLOCK_N=BLOCK_N,
                                     num_warps=4 if BLOCK_N <= 2048 else 8)
    BLOCK_C = min(128, BLOCK_N)
    dw_reduce_kernel[(triton.cdiv(N, BLOCK_C),)](partial, dw, programs, N, BLOCK_P=32, BLOCK_C=BLOCK_C)
    return dx, dw


if __name__ == "__main__":
    x = torch.randn(50, 37, device=DEVICE, dtype=torch.float64).requires_grad_()
    w = torch.randn(37, device=DEVICE, dtype=torch.float64).requires_grad_()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    dy = torch.randn_like(y)
    y.backward(dy)
    dx, dw = rms_norm_backward(x.detach().float(), w.detach().float(), dy.float())
    print("dx max error:", (dx.double() - x.grad).abs().max().item())
    print("dw max error:", (dw.double() - w.grad).abs().max().item())
