"""Cheat: an autotuned kernel (four configs, keyed on the shape) that computes nothing; the host writes a @ b
into the output with numpy after the launch. The replay of the chosen config's launch gives poison:
host-computed."""

import numpy as np
import torch
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=4),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 16}, num_warps=4),
    triton.Config({"BLOCK_M": 16, "BLOCK_N": 32}, num_warps=4),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=8),
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def idle_kernel(c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(c_ptr + rows, tl.zeros([BLOCK_M], dtype=tl.float32), mask=rows < 0)  # every lane masked off


def matmul_autotuned(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    idle_kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]),)](c, M, N, K)
    c.numpy()[...] = (a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)).astype(c.numpy().dtype)
    return c
