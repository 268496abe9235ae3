"""torch.compile and Triton kernels: what Dynamo traces, what breaks a graph, and the two ways to make an op.

- Dynamo traces a plain launcher of a Triton kernel, and the torch.autograd.Function around the LayerNorm
  kernels, into one graph with no break; `fullgraph=True` compiles forward and backward, and the gradients
  equal eager's.
- A graph breaks where Dynamo cannot follow: a function marked `torch.compiler.disable`, or `.item()`, which
  turns a tensor into a Python number on the host.
- `torch.library.custom_op` hides code the compiler cannot trace behind an opaque op (here the `.item()`);
  `torch.library.triton_op` registers Triton kernels as an op that the compiler still sees into.

Run: python examples/compile_graph_breaks.py. Dynamo recognises a Triton kernel only where Triton has a GPU
backend and the kernel is compiled: with TRITON_INTERPRET=1 `@triton.jit` makes an interpreted function, which
Dynamo does not know as a kernel. The parts that need it say so and are skipped there; the course's tests prove
the same graph counts without a GPU, by letting Dynamo trace the kernels and the interpreter run them.
"""

import logging

import torch
import torch._dynamo
import triton
from layernorm_training import DEVICE, layer_norm_fwd, ln_fwd_kernel, triton_layer_norm
from torch.utils._triton import has_triton
from triton.runtime.jit import JITFunction

torch._logging.set_logs(dynamo=logging.ERROR)   # the breaks are counted below; no warning for each


def counts(fn, *args):
    """(graphs, graph breaks) of fn on these arguments, as torch._dynamo.explain finds them."""
    torch._dynamo.reset()
    report = torch._dynamo.explain(fn)(*args)
    return report.graph_count, report.graph_break_count


def block_plain(x, w, b):                  # a plain launcher between two torch ops
    return torch.relu(layer_norm_fwd(torch.tanh(x), w, b)[0]) * 2


def block_function(x, w, b):               # the autograd.Function: forward and backward kernels
    return torch.relu(triton_layer_norm(torch.tanh(x), w, b)) * 2


@torch.compiler.disable
def layer_norm_opaque(x, w, b):
    return layer_norm_fwd(x, w, b)[0]


def block_disabled(x, w, b):               # the same launcher, hidden from Dynamo on purpose
    return torch.relu(layer_norm_opaque(torch.tanh(x), w, b)) * 2


def block_item(x):                         # a host value in the middle of the block
    t = torch.tanh(x)
    scale = t.abs().max().item()           # a Python float: Dynamo ends the graph here
    return torch.relu(t / scale)


@torch.library.custom_op("tritonlab::max_normalize", mutates_args=())
def max_normalize(t: torch.Tensor) -> torch.Tensor:
    return t / t.abs().max().item()        # runs eagerly, inside the op: the compiler never looks in


@max_normalize.register_fake
def _(t):
    return torch.empty_like(t)             # shape and dtype only: what tracing needs


def block_custom_op(x):
    return torch.relu(max_normalize(torch.tanh(x)))


def inputs():
    x = torch.randn(8, 16, device=DEVICE)
    w = 1 + 0.1 * torch.randn(16, device=DEVICE)
    b = 0.1 * torch.randn(16, device=DEVICE)
    return x, w, b


def traced_kernels(backend="inductor"):
    """What Dynamo makes of the launcher and of the Function, and whether fullgraph compilation of the
    Function gives eager's gradients. Needs Dynamo to see Triton kernels."""
    x, w, b = inputs()
    found = {"plain launcher": counts(block_plain, x, w, b), "autograd.Function": counts(block_function, x, w, b)}
    torch._dynamo.reset()
    compiled = torch.compile(block_function, fullgraph=True, backend=backend)   # any break would raise
    ours = [t.clone().requires_grad_() for t in (x, w, b)]
    ref = [t.clone().requires_grad_() for t in (x, w, b)]
    compiled(*ours).sum().backward()
    block_function(*ref).sum().backward()
    found["largest gradient difference, compiled vs eager"] = max(
        (a.grad - e.grad).abs().max().item() for a, e in zip(ours, ref, strict=True))
    return found


def dynamo_sees_triton():
    return has_triton() and isinstance(ln_fwd_kernel, JITFunction)


def triton_op_demo(backend="inductor"):
    """The forward kernel registered with triton_op: an op in the graph, whose kernel Inductor still sees."""
    from torch.library import triton_op, wrap_triton

    @triton_op("tritonlab::layer_norm_fwd", mutates_args={})
    def ln_fwd_op(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        stats = torch.empty((2, M), device=x.device, dtype=torch.float32)   # mean and rstd
        wrap_triton(ln_fwd_kernel)[(M,)](x, w, b, y, stats[0], stats[1], N, x.stride(0), y.stride(0), eps,
                                         BLOCK_N=triton.next_power_of_2(N), FP64=False)
        return y

    x, w, b = inputs()
    f = torch.compile(lambda a: torch.relu(ln_fwd_op(torch.tanh(a), w, b, 1e-5)), fullgraph=True, backend=backend)
    ref = torch.relu(torch.nn.functional.layer_norm(torch.tanh(x), (16,), w, b, 1e-5))
    torch.testing.assert_close(f(x), ref, rtol=1e-4, atol=1e-4)
    return counts(lambda a: torch.relu(ln_fwd_op(torch.tanh(a), w, b, 1e-5)), x)


if __name__ == "__main__":
    torch.manual_seed(0)
    x, w, b = inputs()
    print("torch.compiler.disable: {} graphs, {} graph break".format(*counts(block_disabled, x, w, b)))
    print(".item() on the host:    {} graphs, {} graph break".format(*counts(block_item, x)))
    print("custom_op around it:    {} graph, {} graph breaks".format(*counts(block_custom_op, x)))
    if dynamo_sees_triton():
        for name, value in traced_kernels().items():
            print(f"{name}: {value}")
        print("triton_op: {} graph, {} graph breaks".format(*triton_op_demo()))
    else:
        print("Dynamo sees Triton kernels only on a GPU, compiled (not with TRITON_INTERPRET=1): "
              "the launcher, the Function and triton_op are shown there")
