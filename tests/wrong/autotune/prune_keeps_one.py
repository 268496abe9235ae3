"""Wrong: the early prune keeps one config for every shape, so the autotuner tunes nothing (it only picks the
first config that fits the shared-memory budget)."""

import torch
import triton
import triton.language as tl

SMEM_BUDGET = 160 * 1024  # bytes: below the ~227 KB an sm_90 block may opt in to


def _staged_bytes(config, element_size):
    kw = config.kwargs
    return (kw["TM"] * kw["TK"] + kw["TK"] * kw["TN"]) * element_size * config.num_stages


def _one(configs, named_args, **kwargs):
    size = named_args["x"].element_size()
    return [c for c in configs if _staged_bytes(c, size) <= SMEM_BUDGET][:1]


@triton.autotune(
    configs=[
        triton.Config({"TM": 16, "TN": 32, "TK": 16}, num_warps=2, num_stages=2),
        triton.Config({"TM": 32, "TN": 32, "TK": 32}, num_warps=4, num_stages=3),
        triton.Config({"TM": 32, "TN": 64, "TK": 32}, num_warps=4, num_stages=3),
        triton.Config({"TM": 64, "TN": 32, "TK": 64}, num_warps=4, num_stages=2),
        triton.Config({"TM": 64, "TN": 64, "TK": 32}, num_warps=8, num_stages=4),
        triton.Config({"TM": 128, "TN": 64, "TK": 32}, num_warps=8, num_stages=3),
        triton.Config({"TM": 256, "TN": 256, "TK": 128}, num_warps=8, num_stages=4),  # never fits
    ],
    key=["M", "N", "K"],
    prune_configs_by={"early_config_prune": _one},
)
@triton.jit
def _matmul_tiles(
    x, y, out, M, N, K, sxm, sxk, syk, syn, som, son, TM: tl.constexpr, TN: tl.constexpr, TK: tl.constexpr
):
    i = tl.program_id(0) * TM + tl.arange(0, TM)
    j = tl.program_id(1) * TN + tl.arange(0, TN)
    acc = tl.zeros((TM, TN), dtype=tl.float32)
    for k0 in range(0, K, TK):
        k = k0 + tl.arange(0, TK)
        xt = tl.load(
            x + i[:, None] * sxm + k[None, :] * sxk, mask=(i[:, None] < M) & (k[None, :] < K), other=0.0
        )
        yt = tl.load(
            y + k[:, None] * syk + j[None, :] * syn, mask=(k[:, None] < K) & (j[None, :] < N), other=0.0
        )
        acc = tl.dot(xt, yt, acc)
    tl.store(
        out + i[:, None] * som + j[None, :] * son,
        acc.to(out.dtype.element_ty),
        mask=(i[:, None] < M) & (j[None, :] < N),
    )


def matmul_autotuned(a, b):
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"cannot multiply {tuple(a.shape)} by {tuple(b.shape)}")
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    _matmul_tiles[lambda meta: (triton.cdiv(M, meta["TM"]), triton.cdiv(N, meta["TN"]))](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)
    )
    return c
