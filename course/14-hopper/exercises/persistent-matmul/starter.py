"""persistent-matmul: a GEMM whose grid is one program per SM, each program looping over output tiles.

Graded on the interpreter and on a GPU. `num_sms` is given by the check (132 on a GPU, 4 on the interpreter).
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                             stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr):
    # TODO: count the output tiles, then loop over the tiles of this program:
    #       the first is tl.program_id(0), the step is the number of programs in the grid.
    # TODO: for each tile, find (pid_m, pid_n) in grouped order (lesson 9) and compute it:
    #       an fp32 accumulator, a masked loop over K with tl.dot, a masked store.
    pass


def persistent_matmul(a, b, num_sms):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    BLOCK_M, BLOCK_N, BLOCK_K = (128, 128, 64) if a.is_cuda else (64, 64, 64)
    # TODO: a 1-D grid of min(num_sms, number of tiles) programs
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    persistent_matmul_kernel[grid](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=8,
        UPCAST=a.dtype == torch.bfloat16 and not a.is_cuda,  # the interpreter cannot multiply bf16 blocks
        PRECISION="ieee" if a.dtype == torch.float32 else "tf32")
    return c
