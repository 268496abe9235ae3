"""Wrong: b's scale row indexed by the column, not by the 128-column block."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
GROUP_K = 128  # the scales' granularity along K (and along N for b)


@triton.jit
def fp8_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    sa_ptr,
    sb_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bn,
    stride_bk,
    stride_cm,
    stride_cn,
    stride_sam,
    stride_sag,
    stride_sbn,
    stride_sbg,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    GROUP: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # cost model: reads (M·K + N·K) bytes of fp8 and the scales, writes M·N·2 bytes; FLOPs = 2·M·N·K
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_here = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % rows_here
    pid_n = (pid % per_group) // rows_here

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for g in range(0, tl.cdiv(K, GROUP)):
        k = g * GROUP + tl.arange(0, GROUP)
        a = tl.load(
            a_ptr + offs_m[:, None] * stride_am + k[None, :] * stride_ak,
            mask=mask_m[:, None] & (k[None, :] < K),
            other=0.0,
        )
        # b is stored [N, K] (like nn.Linear's weight): read the [GROUP, BLOCK_N] tile of its transpose
        b = tl.load(
            b_ptr + offs_n[None, :] * stride_bn + k[:, None] * stride_bk,
            mask=(k[:, None] < K) & mask_n[None, :],
            other=0.0,
        )
        # one group's partial product, exact products summed in fp32, then scaled once in fp32
        part = tl.dot(a, b)
        sa = tl.load(sa_ptr + offs_m * stride_sam + g * stride_sag, mask=mask_m, other=0.0)
        sb = tl.load(sb_ptr + offs_n * stride_sbn + g * stride_sbg, mask=mask_n, other=0.0)
        acc += part * sa[:, None] * sb[None, :]
    tl.store(
        c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
        acc.to(c_ptr.dtype.element_ty),
        mask=mask_m[:, None] & mask_n[None, :],
    )


def fp8_matmul(a, b, a_scale, b_scale):
    assert a.dtype == b.dtype == torch.float8_e4m3fn, "a and b are fp8 e4m3"
    M, K = a.shape
    N = b.shape[0]
    assert b.shape[1] == K, "b is [N, K]"
    groups = triton.cdiv(K, GROUP_K)
    assert a_scale.shape == (M, groups) and b_scale.shape == (triton.cdiv(N, GROUP_K), groups)
    c = torch.empty((M, N), device=a.device, dtype=torch.bfloat16)
    BLOCK_M, BLOCK_N = (128, 128) if a.is_cuda else (32, 64)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    fp8_matmul_kernel[grid](
        a,
        b,
        c,
        a_scale,
        b_scale,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        a_scale.stride(0),
        a_scale.stride(1),
        b_scale.stride(0),
        b_scale.stride(1),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        GROUP=GROUP_K,
        GROUP_M=8,
        num_warps=8 if a.is_cuda else 4,
    )
    return c


def quantize_rows(x, group=GROUP_K):
    """x[R, K] (float) -> (fp8 values, fp32 scales[R, cdiv(K, group)]): each row's 128-wide groups scaled
    so that their largest magnitude becomes 448, e4m3's largest finite value."""
    rows, k = x.shape
    groups = triton.cdiv(k, group)
    padded = torch.zeros(rows, groups * group, dtype=torch.float32, device=x.device)
    padded[:, :k] = x
    amax = padded.view(rows, groups, group).abs().amax(dim=2).clamp(min=1e-12)
    scale = amax / 448.0
    q = (padded.view(rows, groups, group) / scale[:, :, None]).view(rows, -1)[:, :k]
    return q.to(torch.float8_e4m3fn), scale
