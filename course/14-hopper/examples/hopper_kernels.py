"""Lesson 14's kernels on awkward shapes: a persistent tile loop, TMA copies through tensor descriptors, a loop
asked for warp specialization, and an fp8 GEMM with one scale per tensor. Runs on the interpreter (with an
emulated count of 4 SMs) and on a GPU; each result is compared with torch."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def sm_count():
    return torch.cuda.get_device_properties(0).multi_processor_count if DEVICE == "cuda" else 4


@triton.jit
def persistent_scale_kernel(x_ptr, y_ptr, M, N, stride_xm, stride_ym, alpha,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    for tile in range(tl.program_id(0), tiles_m * tiles_n, tl.num_programs(0)):
        first_m = (tile // per_group) * GROUP_M
        rows = tl.minimum(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (tile % per_group) % rows
        pid_n = (tile % per_group) // rows
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :], mask=mask)
        tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], x * alpha, mask=mask)


@triton.jit
def tma_scale_kernel(x_ptr, y_ptr, M, N, stride_xm, stride_ym, alpha,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[stride_xm, 1], block_shape=[BLOCK_M, BLOCK_N])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[stride_ym, 1], block_shape=[BLOCK_M, BLOCK_N])
    tiles_n = tl.cdiv(N, BLOCK_N)
    for tile in range(tl.program_id(0), tl.cdiv(M, BLOCK_M) * tiles_n, tl.num_programs(0)):
        row = (tile // tiles_n) * BLOCK_M
        col = (tile % tiles_n) * BLOCK_N
        y_desc.store([row, col], x_desc.load([row, col]) * alpha)


@triton.jit
def specialized_dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           SPECIALIZE: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, warp_specialize=SPECIALIZE):
        acc = tl.dot(a_desc.load([pid_m * BLOCK_M, k]), b_desc.load([k, pid_n * BLOCK_N]), acc)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def fp8_tensor_scaled_kernel(a_ptr, b_ptr, c_ptr, M, N, K, scale, stride_am, stride_bn, stride_cm,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + k[None, :],
                    mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(b_ptr + offs_n[None, :] * stride_bn + k[:, None],
                    mask=(k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], (acc * scale).to(tl.bfloat16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def main():
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))
    for m, n in ((1, 8), (37, 200), (130, 72)):
        x = torch.randn(m, n, device=DEVICE)
        y = torch.empty_like(x)
        tiles = triton.cdiv(m, 32) * triton.cdiv(n, 64)
        persistent_scale_kernel[(min(sm_count(), tiles),)](x, y, m, n, x.stride(0), y.stride(0), 3.0,
                                                           BLOCK_M=32, BLOCK_N=64, GROUP_M=4)
        assert torch.equal(y, x * 3.0), (m, n)
        h = x.half()
        z = torch.empty_like(h)
        tma_scale_kernel[(min(sm_count(), tiles),)](h, z, m, n, h.stride(0), z.stride(0), 3.0, BLOCK_M=32, BLOCK_N=64)
        assert torch.equal(z, h * 3.0), (m, n)
    print("persistent and TMA scale: right on 1x8, 37x200 and 130x72")
    a = torch.randn(70, 40, device=DEVICE, dtype=torch.float16)
    b = torch.randn(40, 24, device=DEVICE, dtype=torch.float16)
    for specialize in (False, True):
        c = torch.empty(70, 24, device=DEVICE, dtype=torch.float32)
        specialized_dot_kernel[(triton.cdiv(70, 32), 1)](a, b, c, 70, 24, 40, a.stride(0), b.stride(0), c.stride(0),
                                                         BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, SPECIALIZE=specialize)
        err = (c - a.float() @ b.float()).abs().max().item()
        assert err < 1e-2, err
        print(f"dot with warp_specialize={specialize}: max error {err:.1e}")
    x, w = torch.randn(50, 200, device=DEVICE), torch.randn(30, 200, device=DEVICE)
    sa, sw = x.abs().max() / 448.0, w.abs().max() / 448.0
    qa, qw = (x / sa).to(torch.float8_e4m3fn), (w / sw).to(torch.float8_e4m3fn)
    c = torch.empty(50, 30, device=DEVICE, dtype=torch.bfloat16)
    fp8_tensor_scaled_kernel[(triton.cdiv(50, 32), 1)](qa, qw, c, 50, 30, 200, (sa * sw).item(), qa.stride(0),
                                                       qw.stride(0), c.stride(0), BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    exact = x.double() @ w.double().t()
    rel = ((c.double() - exact).norm() / exact.norm()).item()
    assert rel < 0.1, rel
    print(f"fp8 GEMM, one scale per tensor: relative error {rel:.3f}")


if __name__ == "__main__":
    main()
