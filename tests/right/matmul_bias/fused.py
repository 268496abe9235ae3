"""Right: tiled matmul with the bias and activation applied to the fp32 accumulator, one launch."""

import torch
import triton
import triton.language as tl

ACTS = {None: 0, "relu": 1, "gelu": 2}


@triton.jit
def fused_kernel(
    a_ptr,
    b_ptr,
    bias_ptr,
    c_ptr,
    M,
    N,
    K,
    sam,
    sak,
    sbk,
    sbn,
    scm,
    scn,
    ACT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + ks
        a = tl.load(
            a_ptr + rows[:, None] * sam + kk[None, :] * sak,
            mask=(rows[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + kk[:, None] * sbk + cols[None, :] * sbn,
            mask=(kk[:, None] < K) & (cols[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b)
    bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    z = acc + bias[None, :]
    if ACT == 1:
        z = tl.maximum(z, 0.0)
    elif ACT == 2:
        z = 0.5 * z * (1.0 + tl.math.erf(z * 0.7071067811865476))
    tl.store(
        c_ptr + rows[:, None] * scm + cols[None, :] * scn,
        z.to(c_ptr.dtype.element_ty),
        mask=(rows[:, None] < M) & (cols[None, :] < N),
    )


def matmul_bias(a, b, bias, activation=None):
    bias = bias.contiguous()  # a strided bias: one small host copy (the exercise allows it)
    if activation not in ACTS:
        raise ValueError(f"unknown activation {activation!r}")
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    fused_kernel[grid](
        a,
        b,
        bias,
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
        ACT=ACTS[activation],
        BLOCK_M=32,
        BLOCK_N=32,
        BLOCK_K=32,
    )
    return c
