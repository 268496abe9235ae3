"""Check the stack by hand, then run a vector-copy sanity kernel.

If this passes, the environment can compile, launch, load and store: a later failure is in your kernel.
    TRITON_INTERPRET=1 python examples/sanity_check.py      # without a GPU
    python examples/sanity_check.py                         # on a GPU
"""

import os
import sys

import numpy
import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    # Cost model: reads n elements, writes n elements -> bytes = 2 * n * element_size.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def copy(x: torch.Tensor, block: int = 256) -> torch.Tensor:
    y = torch.empty_like(x)
    if x.numel() > 0:
        copy_kernel[(triton.cdiv(x.numel(), block),)](x, y, x.numel(), BLOCK=block)
    return y


def report_stack() -> bool:
    print(f"python  {sys.version.split()[0]}")
    print(f"torch   {torch.__version__} (CUDA build {torch.version.cuda}, ROCm build {torch.version.hip})")
    print(f"triton  {triton.__version__}")
    print(f"numpy   {numpy.__version__}")
    if os.environ.get("TRITON_INTERPRET") == "1":
        print("backend interpreter (TRITON_INTERPRET=1): kernels run on the CPU, one program at a time")
    elif torch.cuda.is_available():
        print(f"backend GPU: {torch.cuda.get_device_name(0)}")
    else:
        print("backend NONE: no GPU visible and TRITON_INTERPRET is not set.")
        print(
            "        Set TRITON_INTERPRET=1 before starting Python, or install a GPU driver and CUDA PyTorch."
        )
        return False
    return True


def main() -> int:
    if not report_stack():
        return 0  # nothing can run; the report above says why
    failures = 0
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int32):
        for n in (1, 7, 255, 256, 257, 5000):
            x = (torch.randn(n, device=DEVICE) * 1000).to(dtype)
            if not torch.equal(copy(x), x):
                failures += 1
                print(f"  copy FAILED for {dtype}, n={n}")
    if copy(torch.empty(0, device=DEVICE)).numel() != 0:
        failures += 1
    if failures:
        print("sanity check FAILED: suspect the environment, not your kernels")
        return 1
    print("sanity check passed: the stack compiles, launches, loads and stores correctly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
