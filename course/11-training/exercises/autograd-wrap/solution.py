"""Reference solution for autograd-wrap: the fused SwiGLU kernels joined by a torch.autograd.Function.

swiglu(a, b) -> c = silu(a) * b, with silu(a) = a * sigmoid(a), elementwise over two tensors of the same
shape and dtype: any number of dimensions, any strides, float16 / bfloat16 / float32 / float64. c must carry a
grad_fn, so that c.backward(...) (or torch.autograd.grad) fills a.grad and b.grad with the gradients the
backward kernel below computes. Nothing but the two kernels may compute values: the host code reshapes,
copies to a layout the kernels read, allocates and launches.

The two kernels are complete. What they expect from their caller:
- tensors seen as 2-D (M rows, N columns), N being the last dimension of the inputs, each with a column stride
  of 1; their row strides are arguments;
- a grid of (M, triton.cdiv(N, BLOCK)) programs: program (i, j) handles columns j*BLOCK ... of row i;
- outputs allocated by the caller, in the inputs' dtype;
- FP64: True for float64 tensors (the arithmetic is then float64), False for every other dtype (fp32 arithmetic).
swiglu_bwd_kernel takes dc, the gradient of the loss with respect to c, and writes da and db.

Check it with:  tritonlab check autograd-wrap
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def swiglu_fwd_kernel(a_ptr, b_ptr, c_ptr, n_cols, stride_a, stride_b, stride_c,
                      BLOCK: tl.constexpr, FP64: tl.constexpr):
    acc = tl.float64 if FP64 else tl.float32
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(a_ptr + row * stride_a + cols, mask=mask, other=0.0).to(acc)
    b = tl.load(b_ptr + row * stride_b + cols, mask=mask, other=0.0).to(acc)
    sig = 1.0 / (1.0 + tl.exp(-a))
    tl.store(c_ptr + row * stride_c + cols, (a * sig * b).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_bwd_kernel(dc_ptr, a_ptr, b_ptr, da_ptr, db_ptr, n_cols, stride_dc, stride_a, stride_b,
                      stride_da, stride_db, BLOCK: tl.constexpr, FP64: tl.constexpr):
    acc = tl.float64 if FP64 else tl.float32
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    dc = tl.load(dc_ptr + row * stride_dc + cols, mask=mask, other=0.0).to(acc)
    a = tl.load(a_ptr + row * stride_a + cols, mask=mask, other=0.0).to(acc)
    b = tl.load(b_ptr + row * stride_b + cols, mask=mask, other=0.0).to(acc)
    sig = 1.0 / (1.0 + tl.exp(-a))                      # recomputed: cheaper than saving it
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
            swiglu_fwd_kernel[grid](a2, b2, c, n, a2.stride(0), b2.stride(0), c.stride(0),
                                    BLOCK=block, FP64=is_fp64(a))
        ctx.save_for_backward(a2, b2)                  # the 2-D views the backward kernel reads
        ctx.shape = a.shape
        return c.reshape(a.shape)

    @staticmethod
    def backward(ctx, dc):
        a2, b2 = ctx.saved_tensors
        n = a2.shape[1]
        dc2 = rows_of(dc, n)                           # dc may be any layout, even broadcast (stride 0)
        da = torch.empty(a2.shape, device=a2.device, dtype=a2.dtype)
        db = torch.empty(b2.shape, device=b2.device, dtype=b2.dtype)
        if da.numel():
            grid, block = grid_and_block(*a2.shape)
            swiglu_bwd_kernel[grid](dc2, a2, b2, da, db, n, dc2.stride(0), a2.stride(0), b2.stride(0),
                                    da.stride(0), db.stride(0), BLOCK=block, FP64=is_fp64(a2))
        return da.reshape(ctx.shape), db.reshape(ctx.shape)   # one gradient per input of forward


def swiglu(a, b):
    return SwiGLUFunction.apply(a, b)


if __name__ == "__main__":
    torch.manual_seed(0)
    a = torch.randn(2, 5, 48, device=DEVICE, requires_grad=True)
    b = torch.randn(2, 5, 48, device=DEVICE, requires_grad=True)
    swiglu(a, b).square().mean().backward()                 # a tiny loss
    ar, br = (t.detach().double().requires_grad_() for t in (a, b))
    (torch.nn.functional.silu(ar) * br).square().mean().backward()
    print("max |da - ref|:", (a.grad.double() - ar.grad).abs().max().item())
    print("max |db - ref|:", (b.grad.double() - br.grad).abs().max().item())
