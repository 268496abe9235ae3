"""The attention forward for Hopper: K and V tiles fetched by the TMA copy engine, candidate schedules for tuning.

Same mathematics as ``attention._attn_fwd_kernel`` (online softmax in base 2, causal split into an unmasked and
a masked phase), different plumbing, each piece a launch option so that one tuning run on the H200 can tell
which of them pays (``scripts/tune_reference_kernels.py``):

* **tensor descriptors**: q, k, v are viewed as one ``(B·H·S, D)`` matrix each and read through host-built
  TMA descriptors (one ``BLOCK × D`` box per load, straight into the shared-memory layout ``wgmma`` reads); no
  per-thread address arithmetic, and the registers that held it go to the accumulators. A key block that runs
  past the end of a head reads the next head's first rows (or zeros past the tensor's end): those columns are
  masked to −∞ before the softmax, so their V rows are multiplied by exactly 0. o is stored with a masked
  pointer store, so rows past S are never written.
* **FMA softmax**: the row maximum is taken on the raw scores and scaled once (valid for a positive scale),
  so each score costs one fused multiply-add before ``exp2``; ``acc·α`` is handed to the P·V product as its
  accumulator, so the tensor cores add into it instead of a separate add over the tile.
* ``WARP_SPEC``: ``tl.range(..., warp_specialize=True)`` on the key loops (producer warps issue the copies,
  consumer warps do the math) where the Triton version and GPU support it.
* ``PIPE``: the next block's q·kᵀ is issued before this block's softmax (in the unmasked phase), so the
  tensor cores have work while the exponentials run — the overlap FlashAttention-3 gets from its ping-pong
  schedule, here within one program, at the price of a second score tile in registers.
* ``REVERSE``: with a causal mask, programs start from the last query block (the longest key loop) so that
  the short programs fill the tail of the launch instead of the long ones.
* ``LPT`` (longest processing time first, causal): the grid's fast axis is the head, so every head's longest
  program is issued before any head's second longest — the best order for the launch's tail, at the price of
  fewer programs of one head running at once (their K and V are shared through L2 less).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._common import TensorDescriptor


@triton.jit
def _softmax_step(acc, l_i, m_i, qk, v, offs_m, cols, S, qk_scale, MASK: tl.constexpr):
    """Fold one block of raw scores ``qk`` (and its V rows) into the running (acc, l, m).
    MASK 0: every column valid; 1: columns at or past S are masked; 2: also the causal mask."""
    if MASK == 0:
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.exp2(qk * qk_scale - m_new[:, None])
    else:
        keep = (cols < S)[None, :]
        if MASK == 2:
            keep = keep & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(keep, qk * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp2(qk - m_new[:, None])
    alpha = tl.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, l_i, m_new


@triton.jit
def _kv_block(acc, l_i, m_i, q, desc_k, desc_v, kv_row0, start_n, offs_m, offs_n, S, qk_scale,
              MASK: tl.constexpr):  # fmt: skip
    k = desc_k.load([kv_row0 + start_n, 0])
    qk = tl.dot(q, k.T)
    v = desc_v.load([kv_row0 + start_n, 0])
    return _softmax_step(acc, l_i, m_i, qk, v, offs_m, start_n + offs_n, S, qk_scale, MASK)


@triton.jit
def _kv_loop(acc, l_i, m_i, q, desc_k, desc_v, kv_row0, lo, hi, offs_m, S, qk_scale,
             MASK: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr,
             WARP_SPEC: tl.constexpr):  # fmt: skip
    offs_n = tl.arange(0, BLOCK_N)
    # the warp_specialize keyword appears only in the branch that asks for it (a Triton without it still
    # compiles the other)
    if WARP_SPEC:
        for start_n in tl.range(lo, hi, BLOCK_N, num_stages=NUM_STAGES, warp_specialize=True):
            acc, l_i, m_i = _kv_block(
                acc, l_i, m_i, q, desc_k, desc_v, kv_row0, start_n, offs_m, offs_n, S, qk_scale, MASK
            )
    else:
        for start_n in tl.range(lo, hi, BLOCK_N, num_stages=NUM_STAGES):
            acc, l_i, m_i = _kv_block(
                acc, l_i, m_i, q, desc_k, desc_v, kv_row0, start_n, offs_m, offs_n, S, qk_scale, MASK
            )
    return acc, l_i, m_i


@triton.jit
def _kv_loop_pipelined(acc, l_i, m_i, q, desc_k, desc_v, kv_row0, lo, hi, offs_m, S, qk_scale,
                       BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr):  # fmt: skip
    """The unmasked phase with the next block's scores issued before this block's softmax (needs hi > lo)."""
    offs_n = tl.arange(0, BLOCK_N)
    qk = tl.dot(q, desc_k.load([kv_row0 + lo, 0]).T)
    for start_n in tl.range(lo, hi - BLOCK_N, BLOCK_N, num_stages=NUM_STAGES):
        qk_next = tl.dot(q, desc_k.load([kv_row0 + start_n + BLOCK_N, 0]).T)
        v = desc_v.load([kv_row0 + start_n, 0])
        acc, l_i, m_i = _softmax_step(acc, l_i, m_i, qk, v, offs_m, start_n + offs_n, S, qk_scale, 0)
        qk = qk_next
    v = desc_v.load([kv_row0 + hi - BLOCK_N, 0])
    return _softmax_step(acc, l_i, m_i, qk, v, offs_m, hi - BLOCK_N + offs_n, S, qk_scale, 0)


@triton.jit
def _attn_fwd_tma_kernel(
    desc_q, desc_k, desc_v, o_ptr, lse_ptr, H, S, qk_scale, sob, soh, sos, sod,
    CAUSAL: tl.constexpr, HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    NUM_STAGES: tl.constexpr, WARP_SPEC: tl.constexpr, PIPE: tl.constexpr, REVERSE: tl.constexpr,
    LPT: tl.constexpr,
):  # fmt: skip
    if LPT:  # grid (B·H, query blocks): heads on the fast axis, longest query block first
        start_m = tl.num_programs(1) - 1 - tl.program_id(1)
        bh = tl.program_id(0)
    elif REVERSE:
        start_m = tl.num_programs(0) - 1 - tl.program_id(0)
        bh = tl.program_id(1)
    else:
        start_m = tl.program_id(0)
        bh = tl.program_id(1)
    kv_row0 = bh * S  # this head's first row in the (B·H·S, D) views
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = desc_q.load([kv_row0 + start_m * BLOCK_M, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    if CAUSAL:
        full_hi = start_m * BLOCK_M  # key blocks strictly left of the diagonal: every column valid
        diag_hi = tl.minimum(full_hi + BLOCK_M, S)
    else:
        full_hi = (S // BLOCK_N) * BLOCK_N
        diag_hi = S
    if PIPE:
        if full_hi > 0:
            acc, l_i, m_i = _kv_loop_pipelined(
                acc, l_i, m_i, q, desc_k, desc_v, kv_row0, 0, full_hi, offs_m, S, qk_scale, BLOCK_N,
                NUM_STAGES,
            )  # fmt: skip
    else:
        acc, l_i, m_i = _kv_loop(
            acc, l_i, m_i, q, desc_k, desc_v, kv_row0, 0, full_hi, offs_m, S, qk_scale, 0, BLOCK_N,
            NUM_STAGES, WARP_SPEC,
        )  # fmt: skip
    acc, l_i, m_i = _kv_loop(
        acc, l_i, m_i, q, desc_k, desc_v, kv_row0, full_hi, diag_hi, offs_m, S, qk_scale,
        2 if CAUSAL else 1, BLOCK_N, NUM_STAGES, False,
    )  # fmt: skip
    o = acc / l_i[:, None]
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_d = tl.arange(0, HEAD_D)
    m_ok = offs_m < S
    tl.store(
        o_ptr + b * sob + h * soh + offs_m[:, None] * sos + offs_d[None, :] * sod,
        o.to(o_ptr.dtype.element_ty),
        mask=m_ok[:, None],
    )
    tl.store(lse_ptr + bh.to(tl.int64) * S + offs_m, (m_i + tl.log2(l_i)) * 0.6931471805599453, mask=m_ok)


def launch(q, k, v, o, lse, causal: bool, qk_scale: float, cfg: dict) -> None:  # noqa: ANN001
    """Run the TMA forward on contiguous (B, H, S, D) q, k, v into o, lse (the caller checked the layout)."""
    B, H, S, D = q.shape
    bm, bn = int(cfg["BLOCK_M"]), int(cfg["BLOCK_N"])
    rows = B * H * S
    desc_q = TensorDescriptor(q, [rows, D], [D, 1], [bm, D])
    desc_k = TensorDescriptor(k, [rows, D], [D, 1], [bn, D])
    desc_v = TensorDescriptor(v, [rows, D], [D, 1], [bn, D])
    lpt = bool(cfg.get("lpt", False)) and causal
    grid = (B * H, triton.cdiv(S, bm)) if lpt else (triton.cdiv(S, bm), B * H)
    _attn_fwd_tma_kernel[grid](
        desc_q, desc_k, desc_v, o, lse, H, S, qk_scale, *o.stride(),
        CAUSAL=causal, HEAD_D=D, BLOCK_M=bm, BLOCK_N=bn, NUM_STAGES=int(cfg["num_stages"]),
        WARP_SPEC=bool(cfg.get("ws", False)), PIPE=bool(cfg.get("pipe", False)),
        REVERSE=bool(cfg.get("reverse", False)) and causal, LPT=lpt,
        num_warps=int(cfg["num_warps"]), num_stages=int(cfg["num_stages"]),
    )  # fmt: skip
