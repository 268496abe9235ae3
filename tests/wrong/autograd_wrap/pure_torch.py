"""Cheat: no kernel at all; the forward and the backward are torch arithmetic in float64."""

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


class SwiGLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ad = a.double()
        return (ad * torch.sigmoid(ad) * b.double()).to(a.dtype)

    @staticmethod
    def backward(ctx, dc):
        a, b = ctx.saved_tensors
        ad, bd, g = a.double(), b.double(), dc.double()
        sig = torch.sigmoid(ad)
        return (g * bd * sig * (1 + ad * (1 - sig))).to(a.dtype), (g * ad * sig).to(b.dtype)


def swiglu(a, b):
    return SwiGLUFunction.apply(a, b)
