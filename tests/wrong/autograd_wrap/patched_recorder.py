"""Cheat: pure torch in float64, with the grader's recorder replaced from the learner's module. The check
child imports this file, so it can swap `guards.Recorder` for one that forgets every torch op and every event
of the launch record while the launches still count (a no-op kernel runs in the forward and the backward).
Nothing the check child says about itself decides a pass (issue 33): the parent finds a record with no launch
that produced c, da and db."""

import torch
import triton
import triton.language as tl

from tritonlab.grading import guards

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


class _Forget(list):
    def append(self, item):
        pass


class _Blind(guards.Recorder):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.trace, self.torch_ops, self.host_copies = _Forget(), _Forget(), _Forget()


guards.Recorder = _Blind


@triton.jit
def idle_kernel(x_ptr):
    tl.store(x_ptr + tl.arange(0, 2), tl.zeros([2], tl.float32), mask=tl.arange(0, 2) < 0)


class SwiGLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        idle_kernel[(1,)](a)
        ad = a.double()
        return (ad * torch.sigmoid(ad) * b.double()).to(a.dtype)

    @staticmethod
    def backward(ctx, dc):
        a, b = ctx.saved_tensors
        idle_kernel[(1,)](a)
        ad, bd, g = a.double(), b.double(), dc.double()
        sig = torch.sigmoid(ad)
        return (g * bd * sig * (1 + ad * (1 - sig))).to(a.dtype), (g * ad * sig).to(b.dtype)


def swiglu(a, b):
    return SwiGLUFunction.apply(a, b)
