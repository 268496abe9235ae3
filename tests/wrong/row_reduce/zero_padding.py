"""Wrong: padding lanes loaded as 0 also feed the max: a row of negatives gets maximum 0."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
MAX_BLOCK_N = 1024  # columns one program holds at a time; longer rows take several blocks


@triton.jit
def row_reduce_kernel(x_ptr, max_ptr, sum_ptr, n_cols, stride_m, stride_n, BLOCK_N: tl.constexpr):
    # cost model: reads M·N elements, writes 2·M
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_m
    cols = tl.arange(0, BLOCK_N)
    m_vec = tl.full([BLOCK_N], -float("inf"), tl.float32)  # identity of max
    s_vec = tl.zeros([BLOCK_N], tl.float32)  # identity of +
    for start in range(0, n_cols, BLOCK_N):
        c = start + cols
        mask = c < n_cols
        x_for_max = tl.load(x_row + c * stride_n, mask=mask, other=0.0).to(tl.float32)
        x_for_sum = tl.where(mask, x_for_max, 0.0)
        m_vec = tl.maximum(m_vec, x_for_max)
        s_vec += x_for_sum
    tl.store(max_ptr + row, tl.max(m_vec, axis=0))
    tl.store(sum_ptr + row, tl.sum(s_vec, axis=0))


def row_reduce(x):
    assert x.ndim == 2, "row_reduce expects a 2-D tensor"
    M, N = x.shape
    row_max = torch.empty(M, device=x.device, dtype=torch.float32)
    row_sum = torch.empty(M, device=x.device, dtype=torch.float32)
    if M == 0:
        return row_max, row_sum
    BLOCK_N = min(triton.next_power_of_2(max(N, 1)), MAX_BLOCK_N)
    row_reduce_kernel[(M,)](x, row_max, row_sum, N, x.stride(0), x.stride(1), BLOCK_N=BLOCK_N)
    return row_max, row_sum


if __name__ == "__main__":
    x = torch.randn(5, 3000, device=DEVICE)
    m, s = row_reduce(x)
    print(
        "max matches:",
        torch.equal(m, x.max(dim=1).values),
        " sum close:",
        torch.allclose(s, x.sum(dim=1), atol=1e-3),
    )
