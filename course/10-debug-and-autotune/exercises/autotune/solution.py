"""Reference solution for autotune: a matmul whose kernel is tuned by @triton.autotune, keyed on the shape."""

import statistics
import time

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def cpu_do_bench(fn, quantiles=None):
    """Timer for machines without a GPU (the interpreter): same calling convention as the autotuner's."""
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


CONFIGS = [
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=2, num_stages=2),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=8, num_stages=3),
]


def prune_for_shape(configs, named_args, **kwargs):
    """Skip tiles far larger than the matrix: they only add masked work (keep at least one config)."""
    m_cap = max(32, triton.next_power_of_2(named_args["M"]))
    n_cap = max(32, triton.next_power_of_2(named_args["N"]))
    kept = [c for c in configs if c.kwargs["BLOCK_M"] <= m_cap and c.kwargs["BLOCK_N"] <= n_cap]
    return kept or configs[:1]


@triton.autotune(
    configs=CONFIGS,
    key=["M", "N", "K"],
    prune_configs_by={"early_config_prune": prune_for_shape},
    do_bench=None if torch.cuda.is_available() else cpu_do_bench,
)
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  UPCAST: tl.constexpr, PRECISION: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # cost model (compulsory): reads M·K + K·N, writes M·N elements; FLOPs = 2·M·N·K
    GROUP_M: tl.constexpr = 8
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
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        mask_k = k < K
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + k[None, :] * stride_ak,
                    mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        b = tl.load(b_ptr + k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        if UPCAST:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


def matmul_autotuned(a, b):
    assert a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0], "expected a[M, K] and b[K, N]"
    assert a.dtype == b.dtype, "a and b must have the same dtype"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    precision = "ieee" if a.dtype == torch.float32 else "tf32"
    upcast = a.dtype == torch.bfloat16 and not a.is_cuda

    def grid(meta):  # the block sizes are chosen by the autotuner
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    matmul_kernel[grid](a, b, c, M, N, K,
                        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        UPCAST=upcast, PRECISION=precision)
    return c


if __name__ == "__main__":
    for shape in ((50, 70, 33), (64, 48, 40), (50, 70, 33)):
        M, K, N = shape
        a = torch.randn(M, K, device=DEVICE)
        b = torch.randn(K, N, device=DEVICE)
        err = (matmul_autotuned(a, b).double() - a.double() @ b.double()).abs().max().item()
        print(f"{M}x{K} @ {K}x{N}: error {err:.1e}; chosen {matmul_kernel.best_config.kwargs}; "
              f"tuned shapes so far: {len(matmul_kernel.cache)}")
