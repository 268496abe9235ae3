"""Reference solution for transpose."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def transpose_kernel(x_ptr, out_ptr, M, N,
                     stride_xm, stride_xn, stride_o0, stride_o1,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # x has shape (M, N); out has shape (N, M) and strides (stride_o0, stride_o1).
    # cost model: reads M·N, writes M·N elements -> bytes = 2·M·N·size
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tile = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn, mask=mask)
    # x[i, j] -> out[j, i]: the row index of out is offs_n, its column index offs_m.
    out_ptrs = out_ptr + offs_n[None, :] * stride_o0 + offs_m[:, None] * stride_o1
    tl.store(out_ptrs, tile, mask=mask)


def transpose(x, BLOCK_M=32, BLOCK_N=32):
    assert x.ndim == 2, "transpose expects a 2-D tensor"
    M, N = x.shape
    out = torch.empty((N, M), device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    transpose_kernel[grid](x, out, M, N,
                           x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                           BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out


if __name__ == "__main__":
    x = torch.randn(37, 50, device=DEVICE)[:, 5:45]
    out = transpose(x)
    print("shape", tuple(out.shape), "contiguous:", out.is_contiguous(), " matches:", torch.equal(out, x.T))
