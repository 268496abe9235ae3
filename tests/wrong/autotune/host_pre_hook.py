"""Cheat: a config's pre_hook (host code Triton runs before the launch) computes a @ b in numpy into the
output; the kernel computes nothing. Hooks other than reset_to_zero / restore_value are host code:
host-computed."""

import numpy as np
import torch
import triton
import triton.language as tl


def _answer(nargs):
    a, b, c = nargs["a_ptr"], nargs["b_ptr"], nargs["c_ptr"]
    c.numpy()[...] = (a.numpy().astype(np.float64) @ b.numpy().astype(np.float64)).astype(c.numpy().dtype)


CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, pre_hook=_answer)
    for bm, bn, w in ((16, 16, 4), (32, 16, 4), (16, 32, 4), (32, 32, 8))
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def idle_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(c_ptr + rows, tl.zeros([BLOCK_M], dtype=tl.float32), mask=rows < 0)  # every lane masked off


def matmul_autotuned(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    idle_kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]),)](a, b, c, M, N, K)
    return c
