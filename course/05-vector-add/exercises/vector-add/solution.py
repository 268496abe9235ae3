"""Reference solution for the vector-add exercise."""

import torch
import triton
import triton.language as tl

BLOCK = 1024  # elements per program instance; a power of two


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Cost model: reads 2n elements, writes n -> bytes = 3 * n * element_size.
    # int64: with 2**31 or more elements, pid * BLOCK overflows int32 and wraps to a negative offset.
    pid = tl.program_id(axis=0).to(tl.int64)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if x.dtype.is_fp16() or x.dtype.is_bf16():
        # Compile-time branch: add 16-bit floats in float32 and round once. This also keeps the
        # interpreter correct: it cannot do bf16 arithmetic directly, but it converts to and from float32.
        result = (x.to(tl.float32) + y.to(tl.float32)).to(x.dtype)
    else:
        result = x + y
    tl.store(out_ptr + offsets, result, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Return x + y as a new contiguous tensor with x's shape and dtype."""
    if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
        raise TypeError("vector_add expects two torch.Tensor arguments")
    if x.shape != y.shape:
        raise ValueError(f"vector_add: shapes differ: x is {tuple(x.shape)}, y is {tuple(y.shape)}")
    if x.dtype != y.dtype:
        raise ValueError(f"vector_add: dtypes differ: x is {x.dtype}, y is {y.dtype}")
    if x.device != y.device:
        raise ValueError(f"vector_add: devices differ: x is on {x.device}, y is on {y.device}")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)  # contiguous whatever x's layout
    n = out.numel()
    if n == 0:
        return out  # empty input: no launch
    xc = x.contiguous()  # layout only: returns x itself when it is already contiguous
    yc = y.contiguous()
    grid = (triton.cdiv(n, BLOCK),)
    add_kernel[grid](xc, yc, out, n, BLOCK=BLOCK)
    return out


if __name__ == "__main__":
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(1000, device=DEVICE)
    b = torch.randn(1000, device=DEVICE)
    print("correct:", torch.allclose(vector_add(a, b), a + b))
