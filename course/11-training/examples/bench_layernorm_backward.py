"""Benchmark the LayerNorm backward on a GPU (prints a notice and exits 0 on the interpreter).

The kernels are the lesson's (examples/layernorm_training.py): bytes moved ≈ 3·M·N·s (x and dy read, dx written),
so GB/s = 3·M·N·s / t. The reference RMSNorm backward of the course (tritonlab.perf.kernels.rms_norm_backward)
is timed by `python scripts/bench_gpu.py --only rms_norm_backward`.
"""

import torch
import triton
from layernorm_training import DEVICE, layer_norm_bwd, layer_norm_fwd


def bench_ln_backward(M=16384, N=4096, dtype=torch.bfloat16):
    x = torch.randn(M, N, device=DEVICE, dtype=dtype)
    w = torch.randn(N, device=DEVICE, dtype=dtype)
    b = torch.randn(N, device=DEVICE, dtype=dtype)
    dy = torch.randn(M, N, device=DEVICE, dtype=dtype)
    _, mean, rstd = layer_norm_fwd(x, w, b)
    ms = triton.testing.do_bench(lambda: layer_norm_bwd(x, w, dy, mean, rstd), return_mode="median")
    xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
    y = torch.nn.functional.layer_norm(xr, (N,), wr, br)
    ms_torch = triton.testing.do_bench(
        lambda: torch.autograd.grad(y, (xr, wr, br), dy, retain_graph=True), return_mode="median"
    )
    gbps = 3 * M * N * x.element_size() / ms / 1e6
    print(f"LayerNorm backward {M}x{N} {dtype}: {ms:.3f} ms, {gbps:.0f} GB/s; torch autograd {ms_torch:.3f} ms")


if __name__ == "__main__":
    if DEVICE == "cuda":
        bench_ln_backward()
    else:
        print("The LayerNorm backward benchmark needs a GPU: the interpreter's timings measure NumPy.")
