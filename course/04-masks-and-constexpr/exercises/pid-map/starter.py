"""Exercise pid-map: element i of the result holds the id of the program that wrote it.

Check it with:  tritonlab check pid-map
"""

import torch
import triton
import triton.language as tl


@triton.jit
def pid_map_kernel(out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    # TODO: compute the offsets this program owns with tl.arange.
    # TODO: store this program's id (as int32) into every element it owns, with a mask so that
    #       the last program never writes past element n - 1.
    pass


def pid_map(n: int, block_size: int, device) -> torch.Tensor:
    """Return an int32 tensor of length n with out[i] == i // block_size, written by pid_map_kernel."""
    out = torch.empty(n, dtype=torch.int32, device=device)
    # TODO: return out at once when n == 0 (nothing to write, so no launch).
    # TODO: launch triton.cdiv(n, block_size) programs, passing block_size as BLOCK=block_size.
    return out


if __name__ == "__main__":
    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
    print(pid_map(10, 4, DEVICE).tolist())  # expected: [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
