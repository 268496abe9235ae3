"""Fused ``gelu(A @ B + bias)`` with the exact erf GELU — lesson 9's fusion example.

Cost model: the matmul's 2·M·N·K FLOPs plus about 10 FLOPs per output for the epilogue (negligible at
8192³); bytes (M·K + K·N + M·N + N)·s. Unfused, eager PyTorch writes the M×N product, reads it back for the
bias add, writes it, reads it for the GELU and writes it again: 4·M·N·s extra bytes and two more launches;
the fused kernel applies bias and GELU to the fp32 accumulator in registers and stores once. At 8192³ bf16
the extra traffic is 512 MiB ≈ 0.12 ms on an H200 against ≈ 1.4 ms of tensor-core time, so fusion can buy
about 8% over eager and nothing over a cuBLAS+fused-epilogue peer (torch.compile) unless the matmul itself
is faster.
"""

from __future__ import annotations

import torch

from .matmul import Config, matmul, shape_class

#: Per shape class, configurations that differ from plain matmul's (the epilogue changes what pays), from the
#: tuning run on an H200; classes not listed use ``matmul.CONFIGS``.
CONFIGS: dict[str, Config] = {
    "large": {
        "kernel": "tma",
        "BM": 128,
        "BN": 256,
        "BK": 64,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 3,
        "warp_spec": True,
    },
}


def matmul_bias_gelu(
    a: torch.Tensor,
    b: torch.Tensor,
    bias: torch.Tensor,
    out: torch.Tensor | None = None,
    *,
    config: Config | None = None,
) -> torch.Tensor:
    """``gelu(a @ b + bias)`` (exact erf GELU) in one kernel for fp16/bf16 operands."""
    cfg = config or CONFIGS.get(shape_class(a.shape[0], b.shape[1], a.shape[1]))
    return matmul(a, b, bias=bias, activation="gelu", out=out, config=cfg)


def eager(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The unfused reference: three PyTorch kernels (matmul, add, GELU)."""
    return torch.nn.functional.gelu(a @ b + bias)


def flops(m: int, n: int, k: int) -> int:
    """The matmul's FLOPs; the epilogue's ~10 per output is left out of the count."""
    return 2 * m * n * k


def bytes_moved(m: int, n: int, k: int, elem_size: int) -> int:
    """Operands and bias read once, the result written once."""
    return (m * k + k * n + m * n + n) * elem_size
