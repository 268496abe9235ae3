"""Exercise vector-copy: a sanity kernel that copies a 1-D tensor.

Check it with:  tritonlab check vector-copy
"""

import torch
import triton
import triton.language as tl

BLOCK = 256  # elements per program instance; a power of two


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    # Cost model: reads n elements, writes n elements -> bytes = 2 * n * element_size.
    pid = tl.program_id(axis=0)
    # TODO: compute the BLOCK element offsets this program owns (use tl.arange).
    # TODO: build a mask so the last program does not touch memory past element n - 1.
    # TODO: load the block from src_ptr and store it to dst_ptr, both with the mask.
    pass


def vector_copy(x: torch.Tensor) -> torch.Tensor:
    """Return a new tensor equal to the 1-D tensor x, written by copy_kernel."""
    # empty_like is contiguous for a 1-D x; lesson 5 explains why torch.empty(x.shape, ...) is the safer habit.
    y = torch.empty_like(x)
    n = x.numel()
    # TODO: return y straight away when there is nothing to copy (no launch for empty input).
    # TODO: size the grid with triton.cdiv so that every element is covered, and launch copy_kernel.
    return y


if __name__ == "__main__":
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
    for n in (0, 1, 7, 1023, 1024, 1025):
        x = torch.randn(n, device=DEVICE)
        print(n, torch.equal(vector_copy(x), x))
