"""Benchmark vector_add against PyTorch's x + y (GPU only).

Bandwidth = bytes moved / time = 3 * N * element_size / t   (reads x and y, writes out).
On the interpreter there is nothing meaningful to time, and triton.testing.do_bench needs a GPU.
"""

import os

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BLOCK = 1024


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Cost model: reads 2n elements, writes n -> bytes = 3 * n * element_size.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    if n > 0:
        add_kernel[(triton.cdiv(n, BLOCK),)](x.contiguous(), y.contiguous(), out, n, BLOCK=BLOCK)
    return out


def main() -> None:
    if os.environ.get("TRITON_INTERPRET") == "1" or DEVICE != "cuda":
        print("This benchmark needs a GPU: on the interpreter, kernels run in Python and times mean nothing.")
        print("Run it on a machine with an NVIDIA GPU, without TRITON_INTERPRET=1.")
        return
    print(f"{'N':>12} {'triton GB/s':>12} {'torch GB/s':>12}")
    for exp in range(12, 29, 2):
        n = 2**exp
        x = torch.randn(n, device=DEVICE)
        y = torch.randn(n, device=DEVICE)
        assert torch.allclose(vector_add(x, y), x + y)
        nbytes = 3 * n * x.element_size()
        t_triton = triton.testing.do_bench(lambda x=x, y=y: vector_add(x, y), return_mode="median")  # ms
        t_torch = triton.testing.do_bench(lambda x=x, y=y: x + y, return_mode="median")
        print(f"{n:>12,} {nbytes / t_triton / 1e6:>12.1f} {nbytes / t_torch / 1e6:>12.1f}")


if __name__ == "__main__":
    main()
