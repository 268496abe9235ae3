"""Right: the tile order from `tl.swizzle2d`, on int64 program ids (a style learners copy from code that
guards against overflow of pid * BLOCK on huge grids)."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def grouped_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    PRECISION: tl.constexpr,
):
    # cost model (compulsory): reads M·K + K·N, writes M·N elements; FLOPs = 2·M·N·K
    pid = tl.program_id(0).to(tl.int64)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # the row-major tile (i, j) of this program, reordered so that GROUP_M tile rows form one group
    pid_m, pid_n = tl.swizzle2d(pid // tiles_n, pid % tiles_n, tiles_m, tiles_n, GROUP_M)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        mask_k = k < K
        a = tl.load(
            a_ptr + offs_m[:, None] * stride_am + k[None, :] * stride_ak,
            mask=mask_m[:, None] & mask_k[None, :],
            other=0.0,
        )
        b = tl.load(
            b_ptr + k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
            mask=mask_k[:, None] & mask_n[None, :],
            other=0.0,
        )
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(
        c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
        acc.to(c_ptr.dtype.element_ty),
        mask=mask_m[:, None] & mask_n[None, :],
    )


def grouped_matmul(a, b, block_m, block_n, group_m):
    assert a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0], f"cannot multiply {a.shape} by {b.shape}"
    assert a.dtype == b.dtype, "a and b must have the same dtype"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    precision = "ieee" if a.dtype == torch.float32 else "tf32"  # true fp32 products for fp32 inputs
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    grouped_matmul_kernel[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_K=16,
        GROUP_M=group_m,
        PRECISION=precision,
    )
    return c


if __name__ == "__main__":
    a = torch.randn(100, 40, device=DEVICE)
    b = torch.randn(40, 70, device=DEVICE)
    err = (grouped_matmul(a, b, 16, 16, 4) - a @ b).abs().max().item()
    print(f"max abs error: {err:.2e}")
