"""Wrong, and lying about it: one program per tile, plus a patch of the grader's child-side code that writes a
launch record with one program per SM. The fresh replay runs the record as written: those few programs leave
most tiles unwritten, so the launches alone do not give what the function returned."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def persistent_matmul_kernel(
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
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    total = tiles_m * tiles_n  # noqa: F841
    per_group = GROUP_M * tiles_n
    # program p takes tiles p, p + P, p + 2P, ... where P is the number of programs (one per SM)
    for tile in range(tl.program_id(0), tl.program_id(0) + 1):
        first_m = (tile // per_group) * GROUP_M
        rows_here = tl.minimum(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (tile % per_group) % rows_here
        pid_n = (tile % per_group) // rows_here

        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask_m = offs_m < M
        mask_n = offs_n < N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            k = k0 + tl.arange(0, BLOCK_K)
            a = tl.load(
                a_ptr + offs_m[:, None] * stride_am + k[None, :] * stride_ak,
                mask=mask_m[:, None] & (k[None, :] < K),
                other=0.0,
            )
            b = tl.load(
                b_ptr + k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                mask=(k[:, None] < K) & mask_n[None, :],
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


def persistent_matmul(a, b, num_sms):
    assert a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0], "expected a[M, K] and b[K, N]"
    assert a.dtype == b.dtype, "a and b must have the same dtype"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    BLOCK_M, BLOCK_N, BLOCK_K = (128, 128, 64) if a.is_cuda else (64, 64, 64)
    tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    grid = (tiles,)  # one program per tile: each computes the tile numbered by its id
    persistent_matmul_kernel[grid](
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
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
        GROUP_M=8,
        UPCAST=a.dtype == torch.bfloat16 and not a.is_cuda,
        PRECISION="ieee" if a.dtype == torch.float32 else "tf32",
        num_warps=8 if a.is_cuda else 4,
        num_stages=3,
    )
    return c


def _forge() -> None:
    from tritonlab.grading import launches

    honest = launches.launch_record

    def launch_record(rec, inputs, outputs):
        record = honest(rec, inputs, outputs)
        for event in record.get("events", []):
            if event.get("op") == "launch":
                event["grid"] = [min(event["grid"][0], 3)]
        return record

    launches.launch_record = launch_record


_forge()
