"""Exercise vector-add: x + y with a Triton kernel and a safe host wrapper.

Check it with:  tritonlab check vector-add
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024  # elements per program instance; a power of two


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Cost model: reads 2n elements, writes n -> bytes = 3 * n * element_size.
    pid = tl.program_id(axis=0)
    # TODO: compute this program's offsets and a mask for the elements that exist (offsets < n).
    # TODO: load the x and y blocks with the mask. For float16/bfloat16, add in float32 and convert back.
    # TODO: store the sum into out_ptr with the same mask.
    pass


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Return x + y as a new contiguous tensor with x's shape and dtype."""
    # TODO: raise ValueError with a clear message if the shapes, dtypes or devices of x and y differ.
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    # TODO: return out without launching when n == 0.
    # TODO: make the inputs contiguous, size the grid with triton.cdiv(n, BLOCK) and launch add_kernel.
    return out


if __name__ == "__main__":
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(1000, device=DEVICE)
    b = torch.randn(1000, device=DEVICE)
    print("correct:", torch.allclose(vector_add(a, b), a + b))
