"""The online softmax recurrence, block by block, as a Triton kernel for rows longer than one block.

Run:  TRITON_INTERPRET=1 python examples/online_softmax.py

The kernel keeps one running maximum and one running sum per row (scalars), and assumes no block is entirely
-inf (the exercise asks you to handle that case too).
"""

import math

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def trace_on_host(row, block):
    """Print how m and s evolve; return the softmax computed from them."""
    m, s = -math.inf, 0.0
    for k, start in enumerate(range(0, row.numel(), block)):
        chunk = row[start:start + block].double()
        m_new = max(m, chunk.max().item())
        s = s * math.exp(m - m_new) + torch.exp(chunk - m_new).sum().item()
        print(f"  block {k}: block max {chunk.max().item():8.3f}  running max {m_new:8.3f}  running sum {s:10.4f}")
        m = m_new
    return torch.exp(row.double() - m) / s


@triton.jit
def online_softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # reads 2·M·N, writes M·N elements
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_N):          # pass 1: running max and sum
        c = start + cols
        x = tl.load(x_ptr + row * stride_x + c, mask=c < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_N):          # pass 2: normalise and store
        c = start + cols
        x = tl.load(x_ptr + row * stride_x + c, mask=c < n_cols, other=-float("inf")).to(tl.float32)
        tl.store(y_ptr + row * stride_y + c, tl.exp(x - m) / s, mask=c < n_cols)


def main():
    torch.manual_seed(0)
    row = torch.randn(20) * 4
    row[13] = 25.0  # a late, large maximum forces a big rescale
    print("host trace, blocks of 8:")
    y = trace_on_host(row, 8)
    torch.testing.assert_close(y, torch.softmax(row.double(), dim=0))
    print("host recurrence matches torch.softmax\n")

    x = torch.randn(6, 3000, device=DEVICE) * 10
    out = torch.empty_like(x)
    online_softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), out.stride(0), BLOCK_N=512)
    torch.testing.assert_close(out, torch.softmax(x, dim=-1))
    print(f"kernel: rows of {x.shape[1]} columns in blocks of 512 "
          f"({triton.cdiv(x.shape[1], 512)} iterations per pass) match torch.softmax")


if __name__ == "__main__":
    main()
