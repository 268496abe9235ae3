"""fp8-matmul: c = a @ b.T with fp8 e4m3 inputs and one fp32 scale per 128-wide group of K.

a[M, K] and b[N, K] are fp8 e4m3; a_scale[M, cdiv(K, 128)] holds one scale per row and group,
b_scale[cdiv(N, 128), cdiv(K, 128)] one per 128×128 block of b. The result is bf16.
Graded on the interpreter (which runs tl.dot on fp8) and on a GPU, against a float64 reference.
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
GROUP_K = 128


@triton.jit
def fp8_matmul_kernel(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K,
                      stride_am, stride_ak, stride_bn, stride_bk, stride_cm, stride_cn,
                      stride_sam, stride_sag, stride_sbn, stride_sbg,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # TODO: loop over the groups of K; for each, load the a tile [BLOCK_M, GROUP] and the b tile
    #       [GROUP, BLOCK_N] (b is stored [N, K]), multiply them with tl.dot, scale the partial product
    #       by the rows' a scales and the columns' b scales of this group, and add it to acc
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc.to(tl.bfloat16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def fp8_matmul(a, b, a_scale, b_scale):
    M, K = a.shape
    N = b.shape[0]
    c = torch.empty((M, N), device=a.device, dtype=torch.bfloat16)
    BLOCK_M, BLOCK_N = (128, 128) if a.is_cuda else (32, 64)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    fp8_matmul_kernel[grid](
        a, b, c, a_scale, b_scale, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        a_scale.stride(0), a_scale.stride(1), b_scale.stride(0), b_scale.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, GROUP=GROUP_K)
    return c
