"""Matrix multiply ``C = A @ B`` (+ optional bias and erf-GELU epilogue) for bf16/fp16, fp32 accumulation.

Cost model (A: M×K, B: K×N, C: M×N, s bytes per element): 2·M·N·K FLOPs; at least (M·K + K·N + M·N)·s
bytes. Intensity 2·M·N·K / ((M·K + K·N + M·N)·s): 1365 FLOP/byte at 4096³ bf16 — far right of the H200's
ridge (≈ 790 TFLOP/s / 4.3 TB/s ≈ 185 FLOP/byte), so big GEMMs are bound by the tensor cores; but the decode
shape 16×4096×4096 has intensity ≈ 16 FLOP/byte and is bound by streaming the 32 MiB of B once: its floor
is ``K·N·s / copy_bandwidth`` ≈ 8 µs, which is where split-K earns its keep.

Kernels:

* ``_matmul_tma_kernel`` — persistent (one program per SM, tiles visited in GROUP_M-grouped order so that
  the A rows and B columns in use stay in L2), tiles fetched by the tensor-memory accelerator through
  host-built tensor descriptors, ``tl.dot`` lowered to wgmma, optional software pipelining across tiles
  (``FLATTEN``) and warp specialisation (``WARP_SPEC``, producer/consumer warps) where the Triton version
  supports it on Hopper. Needs contiguous A, B, C with 16-byte aligned rows.
* ``_matmul_kernel`` (in ``_matmul_ptr.py``) — pointer-based tiles for any strides, grouped order, and
  split-K; used for skinny (decode) shapes and as the fallback for non-contiguous operands.

The host picks a configuration per *shape class* (``decode`` when M ≤ 64, ``large`` when M·N ≥ 4096², else
``medium``) from :data:`CONFIGS`, tuned on an H200 (docs/gpu-runs/2026-11-29-h200-39df766/h200-autotune-holdout.json shows what a
single tuned config loses on shapes it never saw).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import TensorDescriptor, interpreting, num_sms
from ._matmul_ptr import _epilogue, _grouped_pid, _launch_ptr

Config = dict[str, int | str | bool]

#: Launch configuration per shape class, as used by H200 run 2026-11-29 (39df766) (`h200-results.json`, key
#: "configs"): picked by its tuning passes docs/gpu-runs/2026-11-29-h200-39df766/h200-tuning-pass3.json (large)
#: and -pass4.json (decode, timed with the hidden-launch timer). Split-K lost to a single K pass on 16x4096x4096.
CONFIGS: dict[str, Config] = {
    "large": {
        "kernel": "tma",
        "BM": 128,
        "BN": 256,
        "BK": 64,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 3,
        "flatten": True,
        "warp_spec": True,
    },
    "medium": {
        "kernel": "tma",
        "BM": 128,
        "BN": 128,
        "BK": 64,
        "GROUP_M": 8,
        "num_warps": 4,
        "num_stages": 4,
        "flatten": False,
        "warp_spec": False,
    },
    "decode": {
        "kernel": "ptr",
        "BM": 16,
        "BN": 64,
        "BK": 256,
        "GROUP_M": 1,
        "SPLIT_K": 1,
        "num_warps": 4,
        "num_stages": 4,
        "stagger": True,
    },
}


def shape_class(m: int, n: int, k: int) -> str:
    """Which entry of :data:`CONFIGS` serves an M×K @ K×N product."""
    if m <= 64:
        return "decode"
    if m * n >= 4096 * 4096:
        return "large"
    return "medium"


@triton.jit
def _matmul_tma_kernel(
    a_desc,
    b_desc,
    c_desc,
    bias_ptr,
    M,
    N,
    K,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_SMS: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    GELU: tl.constexpr,
    UPCAST: tl.constexpr,
    FLATTEN: tl.constexpr,
    WARP_SPEC: tl.constexpr,
):
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    num_tiles = num_pid_m * num_pid_n
    # the warp_specialize keyword only appears in the branch that asks for it, so that Triton versions
    # without it still compile the plain persistent loop
    if WARP_SPEC:
        for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=FLATTEN, warp_specialize=True):
            _tma_tile(
                a_desc,
                b_desc,
                c_desc,
                bias_ptr,
                tile_id,
                num_pid_m,
                num_pid_n,
                k_tiles,
                N,
                BM,
                BN,
                BK,
                GROUP_M,
                HAS_BIAS,
                GELU,
                UPCAST,
            )
    else:
        for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=FLATTEN):
            _tma_tile(
                a_desc,
                b_desc,
                c_desc,
                bias_ptr,
                tile_id,
                num_pid_m,
                num_pid_n,
                k_tiles,
                N,
                BM,
                BN,
                BK,
                GROUP_M,
                HAS_BIAS,
                GELU,
                UPCAST,
            )


@triton.jit
def _tma_tile(
    a_desc,
    b_desc,
    c_desc,
    bias_ptr,
    tile_id,
    num_pid_m,
    num_pid_n,
    k_tiles,
    N,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    GELU: tl.constexpr,
    UPCAST: tl.constexpr,
):
    """One output tile of the persistent TMA kernel: K loop, epilogue, TMA store."""
    pid_m, pid_n = _grouped_pid(tile_id, num_pid_m, num_pid_n, GROUP_M)
    off_m = pid_m * BM
    off_n = pid_n * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in range(k_tiles):
        a = a_desc.load([off_m, ki * BK])
        b = b_desc.load([ki * BK, off_n])
        if UPCAST:  # the interpreter's bf16 dot is wrong; the GPU path never takes this branch
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc)
    acc = _epilogue(acc, bias_ptr, off_n + tl.arange(0, BN), N, HAS_BIAS, GELU)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def _tma_ok(*tensors: torch.Tensor) -> bool:
    if TensorDescriptor is None:
        return False
    for t in tensors:
        if t.stride(1) != 1 or (t.stride(0) * t.element_size()) % 16 or t.data_ptr() % 16:
            return False
    return True


def _launch_tma(a, b, c, bias, cfg: Config) -> None:
    M, K = a.shape
    N = b.shape[1]
    BM, BN, BK = int(cfg["BM"]), int(cfg["BN"]), int(cfg["BK"])
    a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
    b_desc = TensorDescriptor.from_tensor(b, [BK, BN])
    c_desc = TensorDescriptor.from_tensor(c, [BM, BN])
    sms = num_sms(a.device.index or 0)
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    grid = (min(sms, tiles),)
    _matmul_tma_kernel[grid](
        a_desc,
        b_desc,
        c_desc,
        bias if bias is not None else c,
        M,
        N,
        K,
        BM=BM,
        BN=BN,
        BK=BK,
        GROUP_M=int(cfg["GROUP_M"]),
        NUM_SMS=grid[0],
        HAS_BIAS=bias is not None,
        GELU=bool(cfg.get("gelu", False)),
        UPCAST=interpreting(),
        FLATTEN=bool(cfg.get("flatten", False)),
        WARP_SPEC=bool(cfg.get("warp_spec", False)),
        num_warps=int(cfg["num_warps"]),
        num_stages=int(cfg["num_stages"]),
    )


def matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    bias: torch.Tensor | None = None,
    activation: str | None = None,
    out: torch.Tensor | None = None,
    *,
    config: Config | None = None,
) -> torch.Tensor:
    """``a @ b`` (+ ``bias``, then ``activation`` "gelu" = exact erf GELU) for 2-D fp16/bf16 tensors."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"bad shapes for matmul: {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"matmul takes two fp16 or two bf16 tensors, got {a.dtype} and {b.dtype}")
    if activation not in (None, "gelu"):
        raise ValueError(f"unknown activation {activation!r}")
    M, K = a.shape
    N = b.shape[1]
    if bias is not None and bias.shape != (N,):
        raise ValueError(f"bias must have shape ({N},)")
    if out is None:
        out = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return out
    if K == 0:
        out.zero_()
        if bias is not None or activation:
            ref = out.float() + (bias.float() if bias is not None else 0.0)
            out.copy_(torch.nn.functional.gelu(ref) if activation else ref)
        return out
    cfg = dict(config or CONFIGS[shape_class(M, N, K)])
    cfg["gelu"] = activation == "gelu"
    if bias is not None:
        bias = bias.contiguous()
    if cfg["kernel"] == "tma" and _tma_ok(a, b, out):
        _launch_tma(a, b, out, bias, cfg)
    else:
        if cfg["kernel"] == "tma":  # operands TMA cannot describe: same tile shape through pointers
            cfg = {**cfg, "kernel": "ptr", "SPLIT_K": 1}
        _launch_ptr(a, b, out, bias, cfg)
    return out


def flops(m: int, n: int, k: int) -> int:
    """One multiply and one add per (m, n, k) triple."""
    return 2 * m * n * k


def bytes_moved(m: int, n: int, k: int, elem_size: int) -> int:
    """Each operand read once and the result written once (the least any schedule can move)."""
    return (m * k + k * n + m * n) * elem_size
