"""Exercise debug-persistent: a persistent matmul with planted bugs (lesson 10, the ladder's persistent rung).

persistent_matmul(a, b, num_programs) -> c = a @ b
    a: (M, K), b: (K, N), fp32 or fp16 (bf16 on a GPU), any strides
    c: (M, N), a new contiguous tensor in a's dtype, accumulated in fp32
    ONE launch of at most num_programs programs. A persistent kernel does not launch one program per output
    tile: it launches a fixed number of them (on a GPU, about one per SM) and each program loops over tiles.
    Here program p is meant to compute the tiles p, p + P, p + 2P, ... of the output in row-major order, where
    P is the number of programs launched.

The code below runs, and its own demo at the bottom passes. It still has three planted bugs, all in the
persistent loop. Climb the debugging layers of lesson 10 to find them: first make the demo fail (what does a
persistent kernel meet that a one-tile-per-program kernel never does?), then look inside the failing run with
`tl.device_print` or the interpreter's `print` and `breakpoint()`, then fix one bug at a time.

Check it with:  tritonlab check debug-persistent
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                             stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             NUM_SMS: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tiles_m * tiles_n
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for tile in range(pid, num_tiles, NUM_SMS):       # every NUM_SMS-th tile, starting at this program's own
        pid_m = tile // tiles_m
        pid_n = tile % tiles_m
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        for k0 in range(0, K, BLOCK_K):
            rk = k0 + tl.arange(0, BLOCK_K)
            a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                        mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
                        mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


def persistent_matmul(a, b, num_programs):
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, "inner dimensions differ"
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    BLOCK_M, BLOCK_N, BLOCK_K = (64, 64, 32) if a.is_cuda else (16, 16, 16)
    num_tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    grid = (min(num_programs, num_tiles),)
    persistent_matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                   c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                   NUM_SMS=132)     # an H100 / H200 has 132 SMs
    return c


if __name__ == "__main__":
    a = torch.randn(32, 24, device=DEVICE)
    b = torch.randn(24, 32, device=DEVICE)
    c = persistent_matmul(a, b, num_programs=4)
    print("max |c - a @ b| =", (c - a @ b).abs().max().item())
