"""Wrong for one of its two configs: the K loop steps by 32 whatever BLOCK_K is, so the BLOCK_K = 64 config adds
overlapping K chunks twice. The tuner is made to keep the first config (every timing equal), the right one:
only a grader that checks every config sees it."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def equal_do_bench(fn, quantiles=None):
    """Every config "times" the same without running: the tuner keeps the first one (BLOCK_K = 32), the right
    one."""
    return [1.0 for _ in quantiles] if quantiles else 1.0


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4),
    ],
    key=["M", "N", "K"],
    reset_to_zero=["c_ptr"],
    do_bench=equal_do_bench,
)
@triton.jit
def matmul_kernel(
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
    UPCAST: tl.constexpr,
    PRECISION: tl.constexpr,
):
    # cost model (compulsory): reads M·K + K·N, writes M·N elements; FLOPs = 2·M·N·K
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_here = tl.minimum(tiles_m - first_m, GROUP_M)
    local = pid % per_group
    pid_m = first_m + local % rows_here
    pid_n = local // rows_here

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    mask_m = offs_m < M
    mask_n = offs_n < N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, 32):  # the bug: steps 32 whatever BLOCK_K is (right only when BLOCK_K = 32)
        k = k0 + offs_k
        mask_k = k < K
        # padding with 0 keeps the masked terms out of the sum
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
        if UPCAST:  # the interpreter cannot multiply bf16 blocks; fp32 holds every bf16 value exactly
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)

    tl.store(
        c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
        acc.to(c_ptr.dtype.element_ty),
        mask=mask_m[:, None] & mask_n[None, :],
    )


def matmul(a, b):
    assert a.ndim == 2 and b.ndim == 2, "matmul expects 2-D tensors"
    assert a.shape[1] == b.shape[0], f"inner dimensions differ: {a.shape} @ {b.shape}"
    assert a.dtype == b.dtype, "a and b must have the same dtype"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    # fp32 inputs: ask for true fp32 products (GPUs default to TF32); 16-bit inputs: tensor-core default
    precision = "ieee" if a.dtype == torch.float32 else "tf32"
    upcast = a.dtype == torch.bfloat16 and not a.is_cuda

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    matmul_kernel[grid](
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
        GROUP_M=8,
        UPCAST=upcast,
        PRECISION=precision,
    )
    return c
