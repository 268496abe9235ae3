"""Tiled GEMM with grouped ordering and an optional fused residual epilogue (tile-aligned shapes only).

Run:  TRITON_INTERPRET=1 python examples/matmul_aligned.py
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, r_ptr, M, N, K,
                  sam, sak, sbk, sbn, scm, scn, srm, srn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, ADD_RESIDUAL: tl.constexpr):
    # reads M·K + K·N (+ M·N), writes M·N elements; FLOPs = 2·M·N·K
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
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak
    b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    if ADD_RESIDUAL:
        acc += tl.load(r_ptr + offs_m[:, None] * srm + offs_n[None, :] * srn).to(tl.float32)
    tl.store(c_ptr + offs_m[:, None] * scm + offs_n[None, :] * scn, acc.to(c_ptr.dtype.element_ty))


def matmul(a, b, residual=None, block=(16, 16, 16), group_m=4):
    bm, bn, bk = block
    M, K = a.shape
    N = b.shape[1]
    assert M % bm == 0 and N % bn == 0 and K % bk == 0, "tile-aligned shapes only"
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    r = c if residual is None else residual
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    matmul_kernel[grid](a, b, c, r, M, N, K, *a.stride(), *b.stride(), *c.stride(), *r.stride(),
                        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group_m, ADD_RESIDUAL=residual is not None)
    return c


def main():
    torch.manual_seed(0)
    M, N, K = 64, 48, 32
    a = torch.randn(M, K, device=DEVICE, dtype=torch.float16)
    b_t = torch.randn(N, K, device=DEVICE, dtype=torch.float16).t()  # a transposed weight, as in nn.Linear
    r = torch.randn(M, N, device=DEVICE, dtype=torch.float16)
    ref = a.float() @ b_t.float()
    for group_m in (1, 4):  # the ordering changes who computes what, never the result
        out = matmul(a, b_t, group_m=group_m)
        torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)
    print(f"{M}x{N}x{K} fp16 GEMM correct for GROUP_M = 1 and 4 "
          f"({triton.cdiv(M, 16) * triton.cdiv(N, 16)} programs, {K // 16} K steps each)")
    fused = matmul(a, b_t, residual=r)
    torch.testing.assert_close(fused.float(), ref + r.float(), atol=2e-2, rtol=2e-2)
    print("fused residual epilogue correct: C = A @ B + R in one launch")
    size = 2
    unfused = (M * K + K * N + M * N) * size + 3 * M * N * size
    fused_b = (M * K + K * N + M * N) * size + M * N * size
    print(f"bytes moved: unfused (GEMM, then add) {unfused}, fused {fused_b} "
          f"-> saves {unfused - fused_b} bytes = 2·M·N·size")


if __name__ == "__main__":
    main()
