"""Wrong: declares BLOCK = 1024 (what is compiled and graded for occupancy) but launches BLOCK * 8: the
occupancy of what runs is the starter's, or worse."""

import torch
import triton
import triton.language as tl

BLOCK = 1024  # elements per program
NUM_WARPS = 4  # warps per program (32 threads each)


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
    grid = (triton.cdiv(n, BLOCK * 8),)
    scale_shift_kernel[grid](x, y, n, a, b, BLOCK=BLOCK * 8, num_warps=NUM_WARPS)
    return y


if __name__ == "__main__":
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(100_000, device=DEVICE)
    print("correct:", torch.allclose(scale_shift(x, 2.0, 0.5), 2.0 * x + 0.5, atol=1e-6))
