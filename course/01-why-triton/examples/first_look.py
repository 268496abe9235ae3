"""A first look at a Triton kernel: launch it, count its programs, inspect the kernel object.

Run on the interpreter (no GPU needed):
    TRITON_INTERPRET=1 python examples/first_look.py
"""

import os

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def scale_shift_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # One program instance handles BLOCK consecutive elements.
    # Cost model: reads n elements, writes n elements -> bytes = 2 * n * element_size.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, 2.0 * x + 1.0, mask=mask)


def scale_shift(x: torch.Tensor, block: int = 64) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    if n > 0:
        grid = (triton.cdiv(n, block),)
        scale_shift_kernel[grid](x, y, n, BLOCK=block)
    return y


def main() -> None:
    mode = "interpreter (CPU, NumPy)" if os.environ.get("TRITON_INTERPRET") == "1" else "compiled for the GPU"
    print(f"device: {DEVICE}; kernels run on the {mode}")
    print(f"kernel object: {type(scale_shift_kernel).__name__}, arguments {scale_shift_kernel.arg_names}")
    print()
    print(f"{'n':>6} {'BLOCK':>6} {'programs':>9} {'idle lanes':>11}  correct")
    for n, block in [(10, 4), (1000, 64), (1024, 64), (1025, 64), (3000, 256)]:
        x = torch.randn(n, device=DEVICE)
        y = scale_shift(x, block)
        programs = triton.cdiv(n, block)
        idle = programs * block - n  # lanes of the last program that the mask switches off
        ok = torch.allclose(y, 2 * x + 1)
        print(f"{n:>6} {block:>6} {programs:>9} {idle:>11}  {ok}")
        assert ok


if __name__ == "__main__":
    main()
