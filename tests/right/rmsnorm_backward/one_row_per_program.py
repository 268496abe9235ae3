"""Right: one program per row, (M, N) fp32 partials, a column-sum kernel."""

import torch
import triton
import triton.language as tl


@triton.jit
def bwd_row(x_ptr, w_ptr, dy_ptr, dx_ptr, part_ptr, N, sxm, sxn, sdm, sdn, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * sxm + cols * sxn, mask=m, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * sdm + cols * sdn, mask=m, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    xhat = x * rstd
    g = dy * w
    dx = rstd * (g - xhat * (tl.sum(g * xhat, axis=0) / N))
    tl.store(dx_ptr + row * N + cols, dx.to(dx_ptr.dtype.element_ty), mask=m)
    tl.store(part_ptr + row * N + cols, dy * xhat, mask=m)


@triton.jit
def col_sum(part_ptr, dw_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows < M)[:, None] & (cols < N)[None, :]
        acc += tl.sum(tl.load(part_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0), axis=0)
    tl.store(dw_ptr + cols, acc.to(dw_ptr.dtype.element_ty), mask=cols < N)


def rms_norm_backward(x, weight, dy, eps=1e-6):
    M, N = x.shape
    w = weight.contiguous()
    dx = torch.empty((M, N), device=x.device, dtype=x.dtype)
    dw = torch.empty((N,), device=x.device, dtype=weight.dtype)
    part = torch.empty((M, N), device=x.device, dtype=torch.float32)
    block = triton.next_power_of_2(N)
    bwd_row[(M,)](
        x, w, dy, dx, part, N, x.stride(0), x.stride(1), dy.stride(0), dy.stride(1), eps, BLOCK=block
    )
    col_sum[(triton.cdiv(N, 64),)](part, dw, M, N, BLOCK_M=64, BLOCK_N=64)
    return dx, dw
