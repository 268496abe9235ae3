"""Reference solution for the vector-copy exercise."""

import torch
import triton
import triton.language as tl

BLOCK = 256  # elements per program instance; a power of two


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, src_stride, BLOCK: tl.constexpr):
    # Cost model: reads n elements, writes n elements -> bytes = 2 * n * element_size.
    # int64: with 2**31 or more elements, pid * BLOCK overflows int32 and wraps to a negative offset.
    pid = tl.program_id(axis=0).to(tl.int64)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    # src_stride is 1 for a contiguous tensor; a strided view such as x[::2] is read through its stride.
    values = tl.load(src_ptr + offsets * src_stride, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


def vector_copy(x: torch.Tensor) -> torch.Tensor:
    """Return a new contiguous tensor equal to the 1-D tensor x, written by copy_kernel."""
    if x.dim() == 1:
        stride = x.stride(0)
    elif x.is_contiguous():
        stride = 1  # any contiguous tensor can be copied as a flat run of elements
    else:
        raise ValueError(f"vector_copy expects a 1-D tensor, got shape {tuple(x.shape)}")
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)  # contiguous, every element written below
    n = x.numel()
    if n == 0:
        return y  # nothing to copy: no launch at all
    grid = (triton.cdiv(n, BLOCK),)
    copy_kernel[grid](x, y, n, stride, BLOCK=BLOCK)
    return y


if __name__ == "__main__":
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
    for n in (0, 1, 7, 1023, 1024, 1025):
        x = torch.randn(n, device=DEVICE)
        print(n, torch.equal(vector_copy(x), x))
