"""Wrong: declares NUM_WARPS = 8 but launches without num_warps (Triton's default, 4): the configuration graded
is not the one that runs."""

import torch
import triton
import triton.language as tl

BLOCK = 1024  # elements per program
NUM_WARPS = 8  # declared, never passed to the launch


@triton.jit
def scale_shift_kernel(x_ptr, y_ptr, n, a, b, BLOCK: tl.constexpr):
    # cost model: reads n elements, writes n
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(y_ptr + offsets, (x * a + b).to(y_ptr.dtype.element_ty), mask=mask)


def scale_shift(x, a, b):
    assert x.ndim == 1, "scale_shift expects a 1-D tensor"
    y = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return y
    grid = (triton.cdiv(n, BLOCK),)
    scale_shift_kernel[grid](x, y, n, a, b, BLOCK=BLOCK)
    return y


if __name__ == "__main__":
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(100_000, device=DEVICE)
    print("correct:", torch.allclose(scale_shift(x, 2.0, 0.5), 2.0 * x + 0.5, atol=1e-6))
