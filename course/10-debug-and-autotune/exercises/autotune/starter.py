"""Exercise autotune: a matmul whose kernel is tuned by @triton.autotune.

matmul_autotuned(a, b) -> a @ b (new contiguous tensor, a's dtype, fp32 accumulation), for any M, N, K >= 1,
any strides, fp32/fp16/bf16 -- like the matmul exercise of lesson 9, but with the block sizes chosen by
@triton.autotune from at least four configs, keyed on the shape. Every config must be correct on every shape.
On the interpreter there is no GPU timer: pass do_bench=cpu_do_bench there, and None on a GPU.

Check it with:  tritonlab check autotune
"""

import statistics
import time

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def cpu_do_bench(fn, quantiles=None):
    """Timer for machines without a GPU: same calling convention as the autotuner's do_bench."""
    fn()  # warm-up
    times = []
    for _ in range(2):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    if quantiles is None:
        return statistics.median(times)
    return [times[min(len(times) - 1, int(q * len(times)))] for q in quantiles]


# TODO: at least four triton.Config objects, each setting BLOCK_M, BLOCK_N and BLOCK_K (powers of two,
#       BLOCK_K >= 16 for tl.dot on fp16/bf16) and choosing num_warps / num_stages.
CONFIGS = [
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=2),
]


# TODO: decorate with @triton.autotune(configs=CONFIGS, key=[...the shape arguments...],
#       do_bench=None if torch.cuda.is_available() else cpu_do_bench), above @triton.jit.
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  UPCAST: tl.constexpr, PRECISION: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # cost model (compulsory): reads M·K + K·N, writes M·N elements; FLOPs = 2·M·N·K
    pid = tl.program_id(0)
    # TODO: map pid to a tile (row-major or grouped), then the masked K loop of lesson 9's matmul:
    #       fp32 accumulator, masks on M, N and K with other=0.0, .to(tl.float32) when UPCAST,
    #       tl.dot(..., input_precision=PRECISION), masked store converted to c's dtype.
    pass


def matmul_autotuned(a, b):
    assert a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    precision = "ieee" if a.dtype == torch.float32 else "tf32"
    upcast = a.dtype == torch.bfloat16 and not a.is_cuda

    def grid(meta):  # the autotuner chooses the block sizes, so the grid reads them from meta
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    # TODO: once the kernel is autotuned, do not pass BLOCK_M/BLOCK_N/BLOCK_K here (the tuner supplies them).
    matmul_kernel[grid](a, b, c, M, N, K,
                        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        UPCAST=upcast, PRECISION=precision, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    return c


if __name__ == "__main__":
    a = torch.randn(50, 70, device=DEVICE)
    b = torch.randn(70, 33, device=DEVICE)
    print("matches:", torch.allclose(matmul_autotuned(a, b), a @ b, atol=1e-4))
