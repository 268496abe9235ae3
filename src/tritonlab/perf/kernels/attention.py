"""FlashAttention forward: ``o = softmax(q·kᵀ·scale [+ causal mask]) · v`` and ``lse`` per query, one pass.

Cost model (B batches × H heads, S queries and keys, head dim D, s bytes per element): HBM traffic is reading
q, k, v and writing o — ``4·B·H·S·D·s`` bytes plus ``4·B·H·S`` for the fp32 log-sum-exp — because the S×S
scores stay on chip; K and V are re-read once per query block, which L2 mostly absorbs. FLOPs: two GEMMs,
``4·B·H·S²·D`` (half of that with a causal mask). At S = 4096, D = 128 that is ~1000 FLOPs per byte:
compute-bound, so the roofline is the tensor-core peak, and the target is the fastest of torch SDPA's
backends (``sdpa.py``).

Design (after the Triton tutorial's fused attention): one program per (BLOCK_M queries, batch·head); q stays in
registers, K and V stream through in BLOCK_N blocks, software-pipelined by ``tl.range(num_stages=...)``. Scores
are scaled by ``scale·log2(e)`` so that ``exp2`` does the exponentials. With a causal mask the key loop runs in
two stages: the blocks strictly left of the diagonal need no mask; the diagonal block(s) apply it. A tail
mask on the keys is compiled in only when S is not a multiple of BLOCK_N (``EVEN_N``).

On a Hopper GPU the default is a third kernel, written in Gluon: ``attention_ws._attn_fwd_ws_kernel``
(``config["kernel"] = "ws"``), warp-specialised (a loader warp and two computing warpgroups, the launch shape of
the fastest peers, the next block's scores in flight under this block's softmax; at head dim 64 three computing
warpgroups without the early scores). It takes contiguous bf16/fp16 operands whose S is a multiple of its key
block and at least one query tile (:func:`attention_ws.usable`); every other call takes the Triton kernels.

A second kernel, ``attention_tma._attn_fwd_tma_kernel`` (``config["kernel"] = "tma"``), reads q, k, v through
TMA tensor descriptors and offers the Hopper schedules (warp specialisation, a pipelined score product, reversed
causal order) as options. :data:`CONFIGS` says which kernel and launch each head dim uses: the pointer kernel's
entries are the ones the recorded H200 runs measured; a TMA entry replaces one only after
``scripts/tune_reference_kernels.py --only attention`` measured it faster on the H200 (and correct).
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ._common import TensorDescriptor, interpreting

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453

#: Launch configurations, by head dim (kernel "ptr" or "tma", BLOCK_M, BLOCK_N, num_warps, num_stages; for
#: "tma" also the flags ws, pipe, reverse); GPU only. The best of 11-14 candidates per head dim and mask in H200
#: run 2026-12-04 (58448a1) (docs/gpu-runs/2026-12-04-h200-58448a1/tune.md), the same for causal and full:
#: hd 128 the TMA kernel 128×128, 8 warps, 3 stages (1.06× the pointer kernel's 128×64 there); hd 64 the TMA
#: kernel 64×64, 4 warps, 4 stages (1.08×).
CONFIGS: dict[int, dict[str, int | str | bool]] = {
    64: {"kernel": "tma", "BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 4},
    128: {"kernel": "tma", "BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "num_stages": 3},
}
#: Causal launches where they differ from CONFIGS (a tuning run may find that the causal mask wants another
#: schedule, e.g. the TMA kernel's reversed order); none does in H200 run 2026-12-04 (58448a1).
CAUSAL_CONFIGS: dict[int, dict[str, int | str | bool]] = {}
#: The interpreter's launch (small tiles: it checks the code path, not the speed).
INTERPRETER_CONFIG: dict[str, int | str | bool] = {
    "kernel": "ptr",
    "BLOCK_M": 32,
    "BLOCK_N": 16,
    "num_warps": 4,
    "num_stages": 1,
}


@triton.jit
def _attn_inner(
    acc, l_i, m_i, q, k_base, v_base, sks, skd, svs, svd, qk_scale, S, start_m, offs_m, offs_n, offs_d,
    STAGE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):  # fmt: skip
    if STAGE == 1:  # causal, strictly below the diagonal: no mask
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:  # causal, the diagonal block(s)
        lo, hi = start_m * BLOCK_M, tl.minimum((start_m + 1) * BLOCK_M, S)
    else:  # not causal: every key
        lo, hi = 0, S
    for start_n in tl.range(lo, hi, BLOCK_N, num_stages=NUM_STAGES):
        cols = start_n + offs_n
        if EVEN_N:
            kt = tl.load(k_base + offs_d[:, None] * skd + cols[None, :] * sks)
        else:
            kt = tl.load(
                k_base + offs_d[:, None] * skd + cols[None, :] * sks, mask=(cols < S)[None, :], other=0.0
            )
        qk = tl.dot(q, kt)
        if STAGE == 2:
            keep = (offs_m[:, None] >= cols[None, :]) & (cols < S)[None, :]
            qk = tl.where(keep, qk * qk_scale, float("-inf"))
        elif EVEN_N:
            qk = qk * qk_scale
        else:
            qk = tl.where((cols < S)[None, :], qk * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.exp2(qk - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if EVEN_N:
            v = tl.load(v_base + cols[:, None] * svs + offs_d[None, :] * svd)
        else:
            v = tl.load(
                v_base + cols[:, None] * svs + offs_d[None, :] * svd, mask=(cols < S)[:, None], other=0.0
            )
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _attn_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, H, S, qk_scale,
    sqb, sqh, sqs, sqd, skb, skh, sks, skd, svb, svh, svs, svd, sob, soh, sos, sod,
    CAUSAL: tl.constexpr, HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    EVEN_N: tl.constexpr, NUM_STAGES: tl.constexpr,
):  # fmt: skip
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_D)
    m_ok = offs_m < S
    q = tl.load(
        q_ptr + b * sqb + h * sqh + offs_m[:, None] * sqs + offs_d[None, :] * sqd,
        mask=m_ok[:, None],
        other=0.0,
    )
    k_base = k_ptr + b * skb + h * skh
    v_base = v_ptr + b * svb + h * svh
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    if CAUSAL:
        acc, l_i, m_i = _attn_inner(
            acc, l_i, m_i, q, k_base, v_base, sks, skd, svs, svd, qk_scale, S, start_m, offs_m, offs_n, offs_d,
            1, BLOCK_M, BLOCK_N, EVEN_N, NUM_STAGES,
        )  # fmt: skip
        acc, l_i, m_i = _attn_inner(
            acc, l_i, m_i, q, k_base, v_base, sks, skd, svs, svd, qk_scale, S, start_m, offs_m, offs_n, offs_d,
            2, BLOCK_M, BLOCK_N, EVEN_N, NUM_STAGES,
        )  # fmt: skip
    else:
        acc, l_i, m_i = _attn_inner(
            acc, l_i, m_i, q, k_base, v_base, sks, skd, svs, svd, qk_scale, S, start_m, offs_m, offs_n, offs_d,
            3, BLOCK_M, BLOCK_N, EVEN_N, NUM_STAGES,
        )  # fmt: skip
    o = acc / l_i[:, None]
    tl.store(
        o_ptr + b * sob + h * soh + offs_m[:, None] * sos + offs_d[None, :] * sod,
        o.to(o_ptr.dtype.element_ty),
        mask=m_ok[:, None],
    )
    tl.store(lse_ptr + bh.to(tl.int64) * S + offs_m, (m_i + tl.log2(l_i)) * 0.6931471805599453, mask=m_ok)


def default_config(head_dim: int, causal: bool) -> dict[str, int | str | bool]:
    """The GPU launch configuration for this head dim and mask (CAUSAL_CONFIGS first for a causal one)."""
    return (CAUSAL_CONFIGS.get(head_dim) if causal else None) or CONFIGS.get(head_dim, CONFIGS[64])


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = False,
    sm_scale: float | None = None,
    *,
    config: dict[str, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(o, lse) for q, k, v of shape (B, H, S, D), fp16/bf16; lse is fp32 (B, H, S), natural log."""
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k, v must share a (B, H, S, D) shape: {q.shape}, {k.shape}, {v.shape}")
    B, H, S, D = q.shape
    if D not in (16, 32, 64, 128):
        raise ValueError(f"head dim {D} is not supported (16, 32, 64 or 128)")
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    o = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    lse = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
    if o.numel() == 0:
        return o, lse
    from . import attention_ws

    # the Gluon kernel by default where it can run (checked once), or when asked for (an error where it cannot)
    ws_default = config is None and takes_gluon(q, k, v, scale)
    if ws_default or (config is not None and config.get("kernel") == "ws"):
        ws_cfg = None if ws_default else {key: val for key, val in config.items() if key != "kernel"} or None
        if not ws_default and not attention_ws.usable(q, k, v, scale, ws_cfg):
            raise ValueError("the Gluon kernel needs a Hopper GPU, contiguous bf16/fp16 operands, S a multiple of "
                             "its key block and a positive scale")  # fmt: skip
        attention_ws.launch(q, k, v, o, lse, causal, scale * LOG2E, ws_cfg)
        return o, lse
    if config is None:
        config = INTERPRETER_CONFIG if interpreting() or not q.is_cuda else default_config(D, causal)
    bm, bn = int(config["BLOCK_M"]), int(config["BLOCK_N"])
    if bm % bn:
        raise ValueError("BLOCK_M must be a multiple of BLOCK_N (the causal diagonal stage needs it)")
    if config.get("kernel", "ptr") == "tma" and tma_ok(q, k, v, scale):
        from . import attention_tma

        attention_tma.launch(q, k, v, o, lse, causal, scale * LOG2E, config)
        return o, lse
    grid = (triton.cdiv(S, bm), B * H)
    _attn_fwd_kernel[grid](
        q, k, v, o, lse, H, S, scale * LOG2E, *q.stride(), *k.stride(), *v.stride(), *o.stride(),
        CAUSAL=causal, HEAD_D=D, BLOCK_M=bm, BLOCK_N=bn, EVEN_N=S % bn == 0,
        NUM_STAGES=int(config["num_stages"]), num_warps=int(config["num_warps"]),
        num_stages=int(config["num_stages"]),
    )  # fmt: skip
    return o, lse


def takes_gluon(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: float | None = None) -> bool:
    """Whether :func:`attention` without ``config`` runs the Gluon forward on these operands."""
    from . import attention_ws

    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    return not interpreting() and attention_ws.usable(q, k, v, scale)


def tma_ok(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> bool:
    """Whether the TMA kernel can take these operands: one contiguous (B, H, S, D) layout each, 16-byte aligned,
    a positive scale (its softmax scales the row maximum after taking it), and a Triton with descriptors."""
    if TensorDescriptor is None:  # pragma: no cover - Triton < 3.4
        return False
    return scale > 0 and all(t.is_contiguous() and t.data_ptr() % 16 == 0 for t in (q, k, v))


def sdpa_flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """torch's scaled_dot_product_attention restricted to the flash backend (one of the peers, `sdpa.py`)."""
    from .sdpa import run_backend

    return run_backend("sdpa_flash", q, k, v, causal)


def sdpa_cudnn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """torch's scaled_dot_product_attention restricted to the cuDNN backend (raises where this torch build or
    GPU has none)."""
    from .sdpa import run_backend

    return run_backend("sdpa_cudnn", q, k, v, causal)


def bytes_moved(b: int, h: int, s: int, d: int, elem_size: int) -> int:
    """Read q, k, v, write o, write the fp32 lse."""
    return 4 * b * h * s * d * elem_size + 4 * b * h * s


def flops(b: int, h: int, s: int, d: int, causal: bool) -> int:
    """Two GEMMs of S×S×D per (batch, head); causal does about half."""
    full = 4 * b * h * s * s * d
    return full // 2 if causal else full


def unfused_bytes(b: int, h: int, s: int, d: int, elem_size: int) -> int:
    """Standard attention: also writes and reads the S×S scores and the S×S probabilities."""
    return 4 * b * h * s * d * elem_size + 4 * b * h * s * s * elem_size
