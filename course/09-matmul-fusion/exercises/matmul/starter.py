"""Exercise matmul: c = a @ b for any M, N, K >= 1, any strides, fp32/fp16/bf16 inputs.

matmul(a, b) -> a new contiguous (M, N) tensor with a's dtype, accumulated in fp32.

Check it with:  tritonlab check matmul
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  UPCAST: tl.constexpr, PRECISION: tl.constexpr):
    # cost model (compulsory): reads M·K + K·N, writes M·N elements; FLOPs = 2·M·N·K
    # TODO: which tile is this program's? Read its coordinates along the two axes of the grid.
    # TODO: the row and column offsets of this program's output tile, and the K offsets of one step.
    # TODO: acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # TODO: loop k0 over range(0, K, BLOCK_K):
    #         load the [BLOCK_M, BLOCK_K] tile of a and the [BLOCK_K, BLOCK_N] tile of b through their strides,
    #         masked on M / N *and* on K, padding with 0.0;
    #         if UPCAST: convert both tiles to tl.float32 (bf16 on the interpreter);
    #         acc = tl.dot(a_tile, b_tile, acc, input_precision=PRECISION)
    # TODO: store acc converted to c's dtype, masked on M and N.
    pass


def matmul(a, b):
    assert a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 64  # on a GPU tl.dot needs BLOCK_K >= 16 for fp16/bf16
    precision = "ieee" if a.dtype == torch.float32 else "tf32"  # GPUs round fp32 dots to TF32 by default
    upcast = a.dtype == torch.bfloat16 and not a.is_cuda
    # TODO: the 2-D grid: how many programs along each axis, so that every BLOCK_M × BLOCK_N tile of the
    #       output c gets exactly one program, in the axis order your kernel reads with tl.program_id.
    grid = (1, 1)
    matmul_kernel[grid](a, b, c, M, N, K,
                        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        UPCAST=upcast, PRECISION=precision)
    return c


if __name__ == "__main__":
    a = torch.randn(50, 70, device=DEVICE)
    b = torch.randn(33, 70, device=DEVICE).t()
    print("matches:", torch.allclose(matmul(a, b), a @ b, atol=1e-4))
