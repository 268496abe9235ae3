"""A Triton kernel under torch.compile: an opaque launcher breaks the graph; custom ops keep one graph.

Run: TRITON_INTERPRET=1 python examples/compile_graph_breaks.py (about 20 s: torch._dynamo is large).
"""

import torch
import torch._dynamo
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def acc_dtype(t):
    return tl.float64 if t.dtype == torch.float64 else tl.float32


@triton.jit
def rms_fwd_kernel(
    x_ptr, w_ptr, y_ptr, rstd_ptr, N, stride_xm, stride_ym, eps, BLOCK_N: tl.constexpr, ACC: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(ACC)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(rstd_ptr + row, rstd)
    tl.store(y_ptr + row * stride_ym + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_bwd_kernel(
    x_ptr,
    w_ptr,
    dy_ptr,
    rstd_ptr,
    dx_ptr,
    partial_ptr,
    M,
    N,
    rows_per_program,
    stride_xm,
    stride_dym,
    stride_dxm,
    BLOCK_N: tl.constexpr,
    ACC: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    dw_acc = tl.zeros([BLOCK_N], dtype=ACC)  # this program's share of dw, kept in registers
    first = (pid * rows_per_program).to(tl.int64)
    for i in range(0, tl.minimum(rows_per_program, M - first)):
        row = first + i
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(ACC)
        dy = tl.load(dy_ptr + row * stride_dym + cols, mask=mask, other=0.0).to(ACC)
        rstd = tl.load(rstd_ptr + row)
        g = dy * w
        c = tl.sum(g * x, axis=0) / N
        dx = rstd * g - x * (rstd * rstd * rstd * c)
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw_acc += dy * x * rstd
    tl.store(partial_ptr + pid * N + cols, dw_acc, mask=mask)  # one row of partial sums per program


@triton.jit
def sum_rows_kernel(
    partial_ptr, out_ptr, P, N, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr, ACC: tl.constexpr
):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < N
    acc = tl.zeros([BLOCK_C], dtype=ACC)
    for start in range(0, P, BLOCK_P):  # always the same order: deterministic
        rows = start + tl.arange(0, BLOCK_P)
        mask = (rows < P)[:, None] & cmask[None, :]
        acc += tl.sum(tl.load(partial_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0), axis=0)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=cmask)


def rms_norm_fwd(x2d, w, eps=1e-6):
    M, N = x2d.shape
    acc = torch.float64 if x2d.dtype == torch.float64 else torch.float32
    y = torch.empty_like(x2d)
    rstd = torch.empty(M, device=x2d.device, dtype=acc)
    rms_fwd_kernel[(M,)](
        x2d,
        w,
        y,
        rstd,
        N,
        x2d.stride(0),
        y.stride(0),
        eps,
        BLOCK_N=triton.next_power_of_2(N),
        ACC=acc_dtype(x2d),
    )
    return y, rstd


def rms_norm_bwd(x2d, w, rstd, dy2d, programs=None):
    M, N = x2d.shape
    if programs is None:
        programs = 4 * torch.cuda.get_device_properties(0).multi_processor_count if x2d.is_cuda else 4
    rows_per_program = triton.cdiv(M, min(M, programs))
    P = triton.cdiv(M, rows_per_program)
    dx = torch.empty_like(x2d)
    dw = torch.empty_like(w)
    partial = torch.empty((P, N), device=x2d.device, dtype=rstd.dtype)
    BLOCK_N = triton.next_power_of_2(N)
    rms_bwd_kernel[(P,)](
        x2d,
        w,
        dy2d,
        rstd,
        dx,
        partial,
        M,
        N,
        rows_per_program,
        x2d.stride(0),
        dy2d.stride(0),
        dx.stride(0),
        BLOCK_N=BLOCK_N,
        ACC=acc_dtype(x2d),
    )
    BLOCK_C = min(128, BLOCK_N)
    sum_rows_kernel[(triton.cdiv(N, BLOCK_C),)](
        partial, dw, P, N, BLOCK_P=16, BLOCK_C=BLOCK_C, ACC=acc_dtype(x2d)
    )
    return dx, dw


def torch_rms(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


class TritonRMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        shape = x.shape
        x2d = x.reshape(-1, shape[-1])
        if x2d.stride(-1) != 1:
            x2d = x2d.contiguous()
        w = weight.contiguous()
        y, rstd = rms_norm_fwd(x2d, w, eps)
        ctx.save_for_backward(x2d, w, rstd)  # tensors: through save_for_backward
        ctx.shape = shape  # plain Python values: attributes
        return y.reshape(shape)

    @staticmethod
    def backward(ctx, dy):
        x2d, w, rstd = ctx.saved_tensors
        dy2d = dy.reshape(x2d.shape)
        if dy2d.stride(-1) != 1:
            dy2d = dy2d.contiguous()
        dx, dw = rms_norm_bwd(x2d, w, rstd, dy2d)
        return dx.reshape(ctx.shape), dw, None


def triton_rms_norm(x, weight, eps=1e-6):
    return TritonRMSNorm.apply(x, weight, eps)


@torch.compiler.disable
def rms_opaque(x, w):
    y, _ = rms_norm_fwd(x, w)
    return y


def block_opaque(x, w):
    return torch.relu(rms_opaque(torch.tanh(x), w)) * 2


x = torch.randn(8, 16, device=DEVICE)
w = torch.randn(16, device=DEVICE)
torch._dynamo.reset()
report = torch._dynamo.explain(block_opaque)(x, w)
print("opaque launcher:", report.graph_count, "graphs,", report.graph_break_count, "graph break(s)")


@torch.library.custom_op("tritonlab::rms_norm_fwd", mutates_args=())
def rms_fwd_op(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    y, rstd = rms_norm_fwd(x.reshape(-1, x.shape[-1]).contiguous(), weight.contiguous(), eps)
    return y.reshape(x.shape), rstd


@rms_fwd_op.register_fake
def _(x, weight, eps):
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    return torch.empty_like(x), x.new_empty(x.shape[:-1].numel(), dtype=acc)


@torch.library.custom_op("tritonlab::rms_norm_bwd", mutates_args=())
def rms_bwd_op(
    x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor, dy: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    x2d = x.reshape(-1, x.shape[-1]).contiguous()
    dx, dw = rms_norm_bwd(x2d, weight.contiguous(), rstd, dy.reshape(x2d.shape).contiguous())
    return dx.reshape(x.shape), dw


@rms_bwd_op.register_fake
def _(x, weight, rstd, dy):
    return torch.empty_like(x), torch.empty_like(weight)


def _save(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight, output[1])


def _backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = rms_bwd_op(x, weight, rstd, dy)
    return dx, dw, None


rms_fwd_op.register_autograd(_backward, setup_context=_save)


def rms_norm_op(x, weight, eps=1e-6):
    return rms_fwd_op(x, weight, eps)[0]


def block_op(x, w):
    return torch.relu(rms_norm_op(torch.tanh(x), w, 1e-6)) * 2


torch._dynamo.reset()
report = torch._dynamo.explain(block_op)(x, w)
print("custom op:", report.graph_count, "graph,", report.graph_break_count, "graph breaks")
compiled = torch.compile(block_op, backend="aot_eager", fullgraph=True)
xg = x.clone().requires_grad_()
compiled(xg, w).sum().backward()
print("compiled forward and backward ran; grad norm", round(xg.grad.norm().item(), 4))

if DEVICE == "cuda" and hasattr(torch.library, "triton_op"):
    from torch.library import triton_op, wrap_triton

    @triton_op("tritonlab::rms_norm_fwd_traced", mutates_args={})
    def rms_fwd_traced(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        rstd = torch.empty(M, device=x.device, dtype=torch.float32)
        wrap_triton(rms_fwd_kernel)[(M,)](
            x,
            weight,
            y,
            rstd,
            N,
            x.stride(0),
            y.stride(0),
            eps,
            BLOCK_N=triton.next_power_of_2(N),
            ACC=tl.float32,
        )
        return y

    f = torch.compile(lambda a, b: torch.relu(rms_fwd_traced(torch.tanh(a), b, 1e-6)), fullgraph=True)
    torch.testing.assert_close(f(x, w), torch.relu(torch_rms(torch.tanh(x), w)), rtol=1e-4, atol=1e-4)
    print("triton_op + wrap_triton: one graph, kernel visible to Inductor")
else:
    print("triton_op / wrap_triton: GPU only here (the interpreter cannot trace a kernel with fake tensors)")
