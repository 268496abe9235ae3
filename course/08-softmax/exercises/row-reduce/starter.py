"""Exercise row-reduce: the maximum and the sum of every row, the two reductions inside a softmax.

row_reduce(x) -> (row_max, row_sum): two new float32 tensors of shape (M,) for a 2-D tensor x of shape (M, N),
float32 or float16, with ANY strides (rows may not be contiguous, columns may not be adjacent).
Compute in float32. Rows can be longer than one block.

Check it with:  tritonlab check row-reduce
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
MAX_BLOCK_N = 1024  # columns one program holds at a time; longer rows take several blocks


@triton.jit
def row_reduce_kernel(x_ptr, max_ptr, sum_ptr, n_cols, stride_m, stride_n, BLOCK_N: tl.constexpr):
    # cost model: reads M·N elements, writes 2·M
    # TODO: this program's row (in int64: row × stride can pass 2**31).
    # TODO: walk this row's columns block by block (mask the columns past n_cols), keeping a running
    #       maximum and a running sum in float32. Padding lanes must not change either result.
    # TODO: store the row's maximum into max_ptr and its sum into sum_ptr.
    pass


def row_reduce(x):
    assert x.ndim == 2, "row_reduce expects a 2-D tensor"
    M, N = x.shape
    row_max = torch.empty(M, device=x.device, dtype=torch.float32)
    row_sum = torch.empty(M, device=x.device, dtype=torch.float32)
    if M == 0:
        return row_max, row_sum
    BLOCK_N = min(triton.next_power_of_2(max(N, 1)), MAX_BLOCK_N)
    # TODO: launch one program per row, passing both strides of x.
    return row_max, row_sum


if __name__ == "__main__":
    x = torch.randn(5, 3000, device=DEVICE)
    m, s = row_reduce(x)
    print("max matches:", torch.equal(m, x.max(dim=1).values), " sum close:", torch.allclose(s, x.sum(dim=1), atol=1e-3))
