"""Right: two torch.library.custom_ops (forward, backward) joined by register_autograd, with fake
implementations; the layout copies are made before the op is called (copies inside an op's body are invisible
to the grader's recorder, docs/grader.md)."""

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


@torch.library.custom_op("tests_right::swiglu_fwd", mutates_args=())
def swiglu_fwd(a2: torch.Tensor, b2: torch.Tensor) -> torch.Tensor:
    m, n = a2.shape
    c = torch.empty((m, n), dtype=a2.dtype, device=a2.device)
    swiglu_fwd_kernel[(m, triton.cdiv(n, 128))](
        a2, b2, c, n, a2.stride(0), b2.stride(0), c.stride(0), BLOCK=128, FP64=a2.dtype == torch.float64
    )
    return c


@swiglu_fwd.register_fake
def _(a2, b2):
    return torch.empty_like(a2)


@torch.library.custom_op("tests_right::swiglu_bwd", mutates_args=())
def swiglu_bwd(dc2: torch.Tensor, a2: torch.Tensor, b2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = a2.shape
    da = torch.empty((m, n), dtype=a2.dtype, device=a2.device)
    db = torch.empty((m, n), dtype=a2.dtype, device=a2.device)
    swiglu_bwd_kernel[(m, triton.cdiv(n, 128))](
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
        BLOCK=128,
        FP64=a2.dtype == torch.float64,
    )
    return da, db


@swiglu_bwd.register_fake
def _(dc2, a2, b2):
    return torch.empty_like(a2), torch.empty_like(b2)


def rows(t):
    t2 = t.reshape(-1, t.shape[-1])
    return t2 if t2.stride(-1) == 1 else t2.contiguous()


def _setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _backward(ctx, dc):
    a2, b2 = ctx.saved_tensors
    return swiglu_bwd(rows(dc), a2, b2)


swiglu_fwd.register_autograd(_backward, setup_context=_setup)


def swiglu(a, b):
    return swiglu_fwd(rows(a), rows(b)).view(a.shape)
