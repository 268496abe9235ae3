"""Exercise autograd-wrap: make a fused SwiGLU trainable.

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


class SwiGLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        # TODO: bring a and b to the 2-D layout the kernels read, allocate c, launch swiglu_fwd_kernel, keep
        #       what backward will need on ctx, and return c with the shape a came in with
        raise NotImplementedError("SwiGLUFunction.forward")

    @staticmethod
    def backward(ctx, dc):
        # TODO: read what forward kept, bring dc to the kernels' layout, allocate da and db, launch
        #       swiglu_bwd_kernel, and return one gradient per input of forward
        raise NotImplementedError("SwiGLUFunction.backward")


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
