"""Right: always copies to contiguous rows (simple, costs a copy for some layouts); the grid uses a fixed BLOCK."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def swiglu_fwd_kernel(
    a_ptr, b_ptr, c_ptr, n_cols, stride_a, stride_b, stride_c, BLOCK: tl.constexpr, FP64: tl.constexpr
):
    acc = tl.float64 if FP64 else tl.float32
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(a_ptr + row * stride_a + cols, mask=mask, other=0.0).to(acc)
    b = tl.load(b_ptr + row * stride_b + cols, mask=mask, other=0.0).to(acc)
    sig = 1.0 / (1.0 + tl.exp(-a))
    tl.store(c_ptr + row * stride_c + cols, (a * sig * b).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_bwd_kernel(
    dc_ptr,
    a_ptr,
    b_ptr,
    da_ptr,
    db_ptr,
    n_cols,
    stride_dc,
    stride_a,
    stride_b,
    stride_da,
    stride_db,
    BLOCK: tl.constexpr,
    FP64: tl.constexpr,
):
    acc = tl.float64 if FP64 else tl.float32
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    dc = tl.load(dc_ptr + row * stride_dc + cols, mask=mask, other=0.0).to(acc)
    a = tl.load(a_ptr + row * stride_a + cols, mask=mask, other=0.0).to(acc)
    b = tl.load(b_ptr + row * stride_b + cols, mask=mask, other=0.0).to(acc)
    sig = 1.0 / (1.0 + tl.exp(-a))  # recomputed: cheaper than saving it
    tl.store(db_ptr + row * stride_db + cols, (dc * a * sig).to(db_ptr.dtype.element_ty), mask=mask)
    da = dc * b * sig * (1.0 + a * (1.0 - sig))
    tl.store(da_ptr + row * stride_da + cols, da.to(da_ptr.dtype.element_ty), mask=mask)


BLOCK = 64


def launch_grid(m, n):
    return (m, triton.cdiv(n, BLOCK))


class SwiGLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        shape = a.shape
        n = shape[-1]
        a2 = a.contiguous().view(-1, n)
        b2 = b.contiguous().view(-1, n)
        c = torch.empty_like(a2)
        swiglu_fwd_kernel[launch_grid(*a2.shape)](
            a2, b2, c, n, a2.stride(0), b2.stride(0), c.stride(0), BLOCK=BLOCK, FP64=a.dtype == torch.float64
        )
        ctx.save_for_backward(a2, b2)
        ctx.shape = shape
        return c.view(shape)

    @staticmethod
    def backward(ctx, dc):
        a2, b2 = ctx.saved_tensors
        n = a2.shape[1]
        dc2 = dc.contiguous().view(-1, n)
        da, db = torch.empty_like(a2), torch.empty_like(b2)
        swiglu_bwd_kernel[launch_grid(*a2.shape)](
            dc2,
            a2,
            b2,
            da,
            db,
            n,
            dc2.stride(0),
            a2.stride(0),
            b2.stride(0),
            da.stride(0),
            db.stride(0),
            BLOCK=BLOCK,
            FP64=a2.dtype == torch.float64,
        )
        return da.view(ctx.shape), db.view(ctx.shape)


def swiglu(a, b):
    return SwiGLUFunction.apply(a, b)
