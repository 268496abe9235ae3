"""Block-scaled fp8 GEMM: ``C = (A ⊙ sa) @ (W ⊙ sw)ᵀ`` with e4m3 inputs, fp32 accumulation, bf16 output (issue 39).

Layout and scales (the "1×128 by 128×128" recipe of DeepSeek-V3, which ``torch._scaled_mm`` also takes):

* ``a``: M×K float8_e4m3fn, row-major; ``a_scale``: M × ⌈K/128⌉ fp32, one scale per row and 128-wide K block;
* ``w``: N×K float8_e4m3fn, row-major (K contiguous, as weights are stored); ``w_scale``: ⌈N/128⌉ × ⌈K/128⌉ fp32,
  one scale per 128×128 block.

The real value of an element is its fp8 value times its block's scale, so a product over one 128-wide K block
is ``sa[m] · sw[n] · Σ_k a[m,k]·w[n,k]``. The kernel runs the fp8 tensor-core product of each K block into a
fresh fp32 tile and folds it into the fp32 accumulator with the two scales: the scales change from block to
block, so the tensor cores cannot accumulate across blocks by themselves (the "promotion" step; it also keeps
the fp8 products' partial sums short). A tile no wider than 128 columns lies inside one weight block, so its
weight scale is one number per K block: it is folded into the row scales first and the promotion is one fused
multiply-add per element, ``acc = fma(part, (sa · sw)[:, None], acc)`` (compiled for sm_90: 64 FMAs a thread
and 3 scale loads per K block, where a scale per column took 64 multiplies, 64 FMAs and 34 loads;
tests/test_reference_lowering.py holds it). A wider tile takes a scale per column. Both operands are K-major,
which is what Hopper's fp8 ``wgmma`` requires.

Persistent like ``matmul_tma``: grid = number of SMs (``PER_SM`` times that when a configuration asks for
several programs on each SM), grouped tile order, host-built TMA descriptors (zero fill past the edges).
:func:`quantize` makes the operands from bf16 data (per-block amax / 448). On the interpreter the fp8 tiles
are converted to fp32 before the product (``UPCAST``): the check there covers the indexing, the scales and the
promotion, not the fp8 tensor-core path; the GPU test covers that.

On a Hopper GPU, above the decode size (M > 64), the default (``GLUON_DEFAULT``; ``config={"GLUON": True}``
asks for it) is the warp-specialised Gluon form of the same computation (``matmul_fp8_ws.py``: a loader warp and
two computing warpgroups); a Triton configuration runs this kernel.

Cost model: 2·M·N·K FLOPs; bytes (M·K + N·K)·1 + M·N·2 + the scales (4·(M + ⌈N/128⌉)·⌈K/128⌉).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import matmul_fp8_ws
from ._common import TensorDescriptor, interpreting, num_sms

SCALE_BLOCK = 128
E4M3_MAX = 448.0
Config = dict[str, int | bool]  # BM, BN, GROUP_M, num_warps, num_stages; PER_SM (default 1); GLUON

#: Per shape class: "large" 64×128 tiles, 4 warps (one warpgroup), 3 stages, two programs on each SM: with the
#: fused promotion the best of the tuning sweep of H100-80GB-HBM3 run 2026-12-05 (cd24198) (docs/gpu-runs/
#: 2026-12-05-h100-80gb-hbm3-cd24198/tune.txt: 0.640 of the fastest peer against 0.586 for 128×128, 8 warps, 3 stages, the
#: large shapes' geometric mean; the earlier 128×128 pick was timed in H200 run 2026-12-04 (58448a1) with the
#: per-column promotion, before the fused one and before PER_SM existed); "decode"
#: 16×32, 4 warps, 6 stages (H200 run 2026-12-04 (58448a1): 1.18× the first guess 16×64, 4 stages; kept by the
#: H100 sweep). The 16-row decode tile uses mma.sync.
CONFIGS: dict[str, Config] = {
    "large": {"BM": 64, "BN": 128, "GROUP_M": 8, "num_warps": 4, "num_stages": 3, "PER_SM": 2},
    "decode": {"BM": 16, "BN": 32, "GROUP_M": 1, "num_warps": 4, "num_stages": 6},
}
#: Whether a call without ``config`` takes the Gluon kernel where it can run. On since H100-80GB-HBM3 run 2026-12-07
#: (e5686c3): its values right on every edge shape, 0.865× the fastest `torch._scaled_mm` scaling against 0.704× for
#: this kernel (``benchmarks/fp8_ws.py``, four large shapes), and `bench --all` with it 0.873× against this
#: kernel's 0.745× (H100-80GB-HBM3 run 2026-12-05 (8b0198d)).
GLUON_DEFAULT = True
INTERPRETER_CONFIG: Config = {"BM": 32, "BN": 32, "GROUP_M": 2, "num_warps": 4, "num_stages": 1}


@triton.jit
def _fp8_tile(a_desc, w_desc, c_desc, sa_ptr, sw_ptr, M, N, stride_sam, stride_sak, stride_swn, stride_swk,
              tile_id, num_pid_m,
              num_pid_n, k_tiles, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
              UPCAST: tl.constexpr):  # fmt: skip
    per_group = GROUP_M * num_pid_n
    first_m = (tile_id // per_group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % per_group) % size_m
    pid_n = (tile_id % per_group) // size_m
    off_m = pid_m * BM
    off_n = pid_n * BN
    rm = off_m + tl.arange(0, BM)
    rn = off_n + tl.arange(0, BN)
    sa_rows = (
        sa_ptr + tl.minimum(rm, M - 1).to(tl.int64) * stride_sam
    )  # clamped: rows past M are never stored
    # BK is the scale block. A tile no wider than it lies inside one weight block (BN divides it and off_n is a
    # multiple of BN): one weight scale per K block, folded into the row scales, so that the promotion is one
    # fused multiply-add per element instead of two multiplies and an add, with one scale load instead of one
    # per column the thread holds. A wider tile reads a scale per column.
    if BN <= BK:
        sw_at = sw_ptr + (off_n // BK).to(tl.int64) * stride_swn
    else:
        sw_at = sw_ptr + (tl.minimum(rn, N - 1) // BK).to(tl.int64) * stride_swn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in range(k_tiles):
        a = a_desc.load([off_m, ki * BK])
        w = w_desc.load([off_n, ki * BK])
        if UPCAST:  # the interpreter has no fp8 product: exact fp32 arithmetic on the same values
            part = tl.dot(a.to(tl.float32), w.to(tl.float32).T)
        else:
            part = tl.dot(a, w.T)
        sa = tl.load(sa_rows + ki * stride_sak)
        sw = tl.load(sw_at + ki * stride_swk)
        if BN <= BK:
            acc = tl.fma(part, (sa * sw)[:, None], acc)
        else:
            acc += part * sa[:, None] * sw[None, :]
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@triton.jit
def _fp8_kernel(a_desc, w_desc, c_desc, sa_ptr, sw_ptr, M, N, K, stride_sam, stride_sak, stride_swn, stride_swk,
                BM: tl.constexpr,
                BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                UPCAST: tl.constexpr):  # fmt: skip
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS):
        _fp8_tile(a_desc, w_desc, c_desc, sa_ptr, sw_ptr, M, N, stride_sam, stride_sak, stride_swn, stride_swk,
                  tile_id, num_pid_m,
                  num_pid_n, k_tiles, BM, BN, BK, GROUP_M, UPCAST)  # fmt: skip


def quantize(x: torch.Tensor, block_rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(x as float8_e4m3fn, fp32 scales) for 2-D ``x``: one scale per ``block_rows`` × 128 block (1 for the
    activations' per-row blocks, 128 for the weights' square blocks), amax / 448 so that no element saturates."""
    if x.dim() != 2:
        raise ValueError(f"quantize takes a 2-D tensor, got shape {tuple(x.shape)}")
    r, c = x.shape
    rb, cb = triton.cdiv(r, block_rows), triton.cdiv(c, SCALE_BLOCK)
    padded = torch.zeros((rb * block_rows, cb * SCALE_BLOCK), device=x.device, dtype=torch.float32)
    padded[:r, :c] = x.float()
    blocks = padded.view(rb, block_rows, cb, SCALE_BLOCK)
    scale = blocks.abs().amax(dim=(1, 3)).clamp_min(1e-12) / E4M3_MAX
    q = (blocks / scale[:, None, :, None]).view_as(padded)[:r, :c].to(torch.float8_e4m3fn)
    return q.contiguous(), scale.contiguous()


def dequantize(q: torch.Tensor, scale: torch.Tensor, block_rows: int) -> torch.Tensor:
    """The float64 values the fp8 data and its block scales stand for (the reference's inputs)."""
    r, c = q.shape
    full = scale.double().repeat_interleave(block_rows, 0).repeat_interleave(SCALE_BLOCK, 1)[:r, :c]
    return q.double() * full


def matmul_fp8(
    a: torch.Tensor,
    a_scale: torch.Tensor,
    w: torch.Tensor,
    w_scale: torch.Tensor,
    out: torch.Tensor | None = None,
    *,
    config: Config | None = None,
) -> torch.Tensor:
    """``(a ⊙ a_scale) @ (w ⊙ w_scale)ᵀ`` in bf16 for fp8 e4m3 ``a`` (M×K) and ``w`` (N×K), scales as above."""
    if a.dim() != 2 or w.dim() != 2 or a.shape[1] != w.shape[1]:
        raise ValueError(f"a is M×K and w is N×K: got {tuple(a.shape)} and {tuple(w.shape)}")
    if a.dtype != torch.float8_e4m3fn or w.dtype != torch.float8_e4m3fn:
        raise ValueError(f"a and w must be float8_e4m3fn, got {a.dtype} and {w.dtype}")
    M, K = a.shape
    N = w.shape[0]
    kb = triton.cdiv(K, SCALE_BLOCK)
    if a_scale.shape != (M, kb) or w_scale.shape != (triton.cdiv(N, SCALE_BLOCK), kb):
        raise ValueError(
            f"scales must be {(M, kb)} and {(triton.cdiv(N, SCALE_BLOCK), kb)}, got {tuple(a_scale.shape)} and "
            f"{tuple(w_scale.shape)}"
        )
    if a_scale.dtype != torch.float32 or w_scale.dtype != torch.float32:
        raise ValueError("scales must be float32")
    for name, t in (("a", a), ("w", w)):
        if t.stride(1) != 1 or t.stride(0) % 16 or t.data_ptr() % 16:
            raise ValueError(f"{name} must have contiguous rows of a multiple of 16 bytes, 16-byte aligned")
    if out is None:
        out = torch.empty((M, N), device=a.device, dtype=torch.bfloat16)
    if M == 0 or N == 0:
        return out
    gpu = a.is_cuda and not interpreting()
    if takes_gluon(a, w, out, config):  # the Gluon kernel, with its own launch (matmul_fp8_ws.CONFIG)
        matmul_fp8_ws.launch(a, a_scale, w, w_scale, out)
        return out
    if config is not None and "GLUON" in config and "BM" not in config:
        config = None  # the Gluon kernel asked for where it cannot run (the decode size): the default launch
    cfg = dict(config or (CONFIGS["decode" if M <= 64 else "large"] if gpu else INTERPRETER_CONFIG))
    BM, BN = int(cfg["BM"]), int(cfg["BN"])
    per_sm = int(cfg.get("PER_SM", 1))
    if per_sm < 1:
        raise ValueError(f"PER_SM must be at least 1, got {per_sm}")
    if BN % SCALE_BLOCK and SCALE_BLOCK % BN:
        raise ValueError(f"BN ({BN}) must divide or be a multiple of {SCALE_BLOCK} (the weight scale block)")
    a_desc = TensorDescriptor.from_tensor(a, [BM, SCALE_BLOCK])
    w_desc = TensorDescriptor.from_tensor(w, [BN, SCALE_BLOCK])
    c_desc = TensorDescriptor.from_tensor(out, [BM, BN])
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    # PER_SM programs on each SM: one by default (a persistent kernel); two one-warpgroup programs let one SM
    # run one program's promotion while the other's product is in the tensor cores
    grid = (min(per_sm * num_sms(a.device.index or 0), tiles),)
    _fp8_kernel[grid](
        a_desc, w_desc, c_desc, a_scale, w_scale, M, N, K, *a_scale.stride(), *w_scale.stride(), BM=BM, BN=BN,
        BK=SCALE_BLOCK, GROUP_M=int(cfg["GROUP_M"]), NUM_SMS=grid[0], UPCAST=interpreting(),
        num_warps=int(cfg["num_warps"]), num_stages=int(cfg["num_stages"]),
    )  # fmt: skip
    return out


def takes_gluon(
    a: torch.Tensor, w: torch.Tensor, out: torch.Tensor | None = None, config: Config | None = None
) -> bool:
    """Whether :func:`matmul_fp8` runs the warp-specialised Gluon kernel: asked for (``GLUON`` in ``config``, or
    ``GLUON_DEFAULT`` without one), on a Hopper GPU, above the decode size (:func:`matmul_fp8_ws.usable`; ``out``
    None: the output it allocates)."""
    asked = GLUON_DEFAULT if config is None else bool(config.get("GLUON", False))
    return asked and a.is_cuda and not interpreting() and matmul_fp8_ws.usable(a, w, out)


def flops(m: int, n: int, k: int) -> int:
    return 2 * m * n * k


def bytes_moved(m: int, n: int, k: int) -> int:
    """fp8 operands read once, the bf16 result written once, and the scales."""
    kb = triton.cdiv(k, SCALE_BLOCK)
    return m * k + n * k + 2 * m * n + 4 * (m + triton.cdiv(n, SCALE_BLOCK)) * kb
