"""Benchmark the copy kernel against torch.clone (GPU only).

Achieved bandwidth = bytes moved / time = 2 * N * element_size / t.
On the interpreter timings mean nothing and triton.testing.do_bench needs a GPU, so this exits early.
"""

import os

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def copy(x: torch.Tensor, block: int = 1024) -> torch.Tensor:
    y = torch.empty_like(x)
    if x.numel() > 0:
        copy_kernel[(triton.cdiv(x.numel(), block),)](x, y, x.numel(), BLOCK=block)
    return y


def main() -> None:
    if os.environ.get("TRITON_INTERPRET") == "1" or DEVICE != "cuda":
        print(
            "Benchmarks need a GPU: on the interpreter every program runs in Python, so times mean nothing."
        )
        return
    print(f"{'N':>12} {'triton GB/s':>12} {'clone GB/s':>12}")
    for exp in range(12, 29, 2):
        n = 2**exp
        x = torch.randn(n, device=DEVICE)
        assert torch.equal(copy(x), x)
        nbytes = 2 * n * x.element_size()
        t_triton = triton.testing.do_bench(lambda x=x: copy(x), return_mode="median")  # milliseconds
        t_torch = triton.testing.do_bench(lambda x=x: x.clone(), return_mode="median")
        print(f"{n:>12,} {nbytes / t_triton / 1e6:>12.1f} {nbytes / t_torch / 1e6:>12.1f}")


if __name__ == "__main__":
    main()
