"""Cheat: the backward launches a kernel into a scratch buffer and writes gradients computed in numpy into the
outputs (the op recorder does not see numpy): only the launch replay catches it."""

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


def rows_of(t, n):
    """t as (M, n) rows with a column stride of 1: a view when the layout allows it, else a copy."""
    t2 = t.reshape(-1, n)
    return t2 if t2.stride(-1) == 1 else t2.contiguous()


def is_fp64(t):
    return t.dtype == torch.float64


def grid_and_block(m, n):
    block = min(1024, triton.next_power_of_2(n))
    return (m, triton.cdiv(n, block)), block


class SwiGLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ValueError(f"a {tuple(a.shape)} {a.dtype} and b {tuple(b.shape)} {b.dtype} must match")
        n = a.shape[-1]
        a2, b2 = rows_of(a, n), rows_of(b, n)
        c = torch.empty(a2.shape, device=a.device, dtype=a.dtype)
        if c.numel():
            grid, block = grid_and_block(*a2.shape)
            swiglu_fwd_kernel[grid](
                a2, b2, c, n, a2.stride(0), b2.stride(0), c.stride(0), BLOCK=block, FP64=is_fp64(a)
            )
        ctx.save_for_backward(a2, b2)  # the 2-D views the backward kernel reads
        ctx.shape = a.shape
        return c.reshape(a.shape)

    @staticmethod
    def backward(ctx, dc):
        a2, b2 = ctx.saved_tensors
        n = a2.shape[1]
        dc2 = rows_of(dc, n)  # dc may be any layout, even broadcast (stride 0)
        da = torch.empty(a2.shape, device=a2.device, dtype=a2.dtype)
        db = torch.empty(b2.shape, device=b2.device, dtype=b2.dtype)
        if da.numel():
            grid, block = grid_and_block(*a2.shape)
            scratch = torch.empty_like(da)  # a launch, so that the backward seems to use a kernel
            swiglu_fwd_kernel[grid](
                a2,
                b2,
                scratch,
                n,
                a2.stride(0),
                b2.stride(0),
                scratch.stride(0),
                BLOCK=block,
                FP64=is_fp64(a2),
            )
            import numpy as np

            av, bv, gv = (np.asarray(t.detach().cpu().numpy(), dtype=np.float64) for t in (a2, b2, dc2))
            sig = 1.0 / (1.0 + np.exp(-av))
            da.numpy()[...] = gv * bv * sig * (1.0 + av * (1.0 - sig))
            db.numpy()[...] = gv * av * sig
        return da.reshape(ctx.shape), db.reshape(ctx.shape)  # one gradient per input of forward


def swiglu(a, b):
    return SwiGLUFunction.apply(a, b)
