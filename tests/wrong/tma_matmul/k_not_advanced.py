"""Wrong: every K step loads the first K box again."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def tma_matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_cm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    UPCAST: tl.constexpr,
):
    # cost model (compulsory): reads M·K + K·N, writes M·N elements; FLOPs = 2·M·N·K
    # a descriptor: base, global shape, strides (the last must be 1) and the box one load moves
    a_desc = tl.make_tensor_descriptor(
        a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K]
    )
    b_desc = tl.make_tensor_descriptor(
        b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N]
    )
    c_desc = tl.make_tensor_descriptor(
        c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N]
    )
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    for tile in range(tl.program_id(0), tiles_m * tiles_n, tl.num_programs(0)):
        first_m = (tile // per_group) * GROUP_M
        rows_here = tl.minimum(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (tile % per_group) % rows_here
        pid_n = (tile % per_group) // rows_here
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):  # noqa: B007
            # boxes that hang over the edge of the tensor are filled with zeros by the copy engine: no masks
            a = a_desc.load([pid_m * BLOCK_M, 0])  # the K coordinate never moves
            b = b_desc.load([0, pid_n * BLOCK_N])
            if UPCAST:  # the interpreter cannot multiply bf16 blocks
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            acc = tl.dot(a, b, acc)
        # a store through the descriptor writes only the part of the box inside the tensor
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))


def _scratch(size, alignment, stream):
    # descriptors built on the device need a little global memory of their own (Triton asks at launch)
    return torch.empty(size, dtype=torch.int8, device=DEVICE)


def tma_matmul(a, b, num_sms):
    assert a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0], "expected a[M, K] and b[K, N]"
    assert a.dtype == b.dtype and a.dtype in (torch.float16, torch.bfloat16), "fp16 or bf16 inputs"
    # a descriptor needs unit stride along rows and 16-byte aligned row starts
    if a.stride(1) != 1:
        a = a.contiguous()
    if b.stride(1) != 1:
        b = b.contiguous()
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    triton.set_allocator(_scratch)
    BLOCK_M, BLOCK_N, BLOCK_K = (128, 128, 64) if a.is_cuda else (64, 64, 64)
    tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    tma_matmul_kernel[(min(num_sms, tiles),)](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        b.stride(0),
        c.stride(0),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
        GROUP_M=8,
        UPCAST=a.dtype == torch.bfloat16 and not a.is_cuda,
        num_warps=8 if a.is_cuda else 4,
        num_stages=3,
    )
    return c
