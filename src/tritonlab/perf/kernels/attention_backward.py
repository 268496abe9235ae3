"""FlashAttention backward: dq, dk, dv from (q, k, v, o, lse, do), recomputing the probabilities block by block.

With ``P = softmax(q·kᵀ·scale)`` (rows), ``o = P·v`` and upstream gradient ``do``:
``dv = Pᵀ·do``, ``dP = do·vᵀ``, ``dS = P ⊙ (dP − Δ)`` with ``Δ = rowsum(do ⊙ o)`` (equal to rowsum(P ⊙ dP)),
``dq = scale·dS·k`` and ``dk = scale·dSᵀ·q``. P is never stored: each block is rebuilt from the forward's
log-sum-exp (``P = exp(q·kᵀ·scale − lse)``), so memory stays O(S) per head.

Kernels:

* ``_delta_kernel``: the pre-pass ``Δ = rowsum(do ⊙ o)`` in fp32 (reads o and do once).
* ``_dkdv_kernel``: one program per (block of BLOCK_N1 keys, batch·head) keeps its k, v and the dk, dv
  accumulators on chip and walks every query block that sees those keys (with a causal mask: from the
  diagonal down; the diagonal blocks masked, the rest not). Its dk, dv are complete when it ends: no atomics.
* ``_dq_kernel``: the second pass, one program per (block of BLOCK_M2 queries, batch·head) walking the keys
  that query block sees, accumulating dq. It recomputes q·kᵀ and do·vᵀ once more (7 matrix products per block
  pair in all instead of 5), which buys a deterministic dq without atomics.
* ``ATOMIC_DQ`` (``config["atomic_dq"]``): the dk/dv programs also add their dq share, ``dSᵀᵀ·k``, into a zeroed
  fp32 buffer with ``tl.atomic_add`` — 5 products, one pass, but the order of the additions (and so the last
  bits of dq) changes from run to run on a GPU. A measured option, not the default. With ``config["tma_dq"]``
  the share is added as one tile by the TMA unit (``descriptor.atomic_add`` on a ``(B·H, S, D)`` descriptor:
  a bulk reduction in L2, FlashAttention-3's way) instead of element by element from registers.
* ``FUSED`` (``config["fused"]``): the dk/dv and dq programs in one launch (a third grid axis picks the role),
  so that both passes share the machine instead of running one after the other.

On a Hopper GPU ``config={"GLUON": True}`` runs the same two passes as warp-specialised Gluon kernels instead
(``attention_backward_ws.py``: a loader warp and two computing warpgroups each); not the default
(``GLUON_DEFAULT``): timed on an H100 they were slower than these (``benchmarks/attention_backward_ws.py``).

Cost model: FLOPs counted as 2.5× the forward's (five S×S×D products: q·kᵀ again, dv, dP, dk, dq — the same
count for every implementation, whatever each recomputes); bytes: read q, k, v, o, do and write dq, dk, dv
(``8·B·H·S·D·s``) plus the fp32 lse and Δ.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from . import attention_backward_ws
from ._common import TensorDescriptor, interpreting

LOG2E = 1.4426950408889634
#: Whether a call without ``config`` takes the warp-specialised Gluon kernels (``attention_backward_ws.py``) where
#: they can run. Off: on an H100 their gradients were right but they ran at 0.708× the fastest SDPA backend
#: against 0.789× for these kernels (``benchmarks/attention_backward_ws.py``, H100-80GB-HBM3 run 2026-12-07
#: (e5686c3)).
GLUON_DEFAULT = False

#: Launch configurations by head dim (GPU): BLOCK_M1 × BLOCK_N1 for the dk/dv pass (queries × keys),
#: BLOCK_M2 × BLOCK_N2 for the dq pass (``num_warps2``/``num_stages2`` for the dq pass where they differ). The best
#: candidates of H200 run 2026-12-04 (58448a1) (docs/gpu-runs/2026-12-04-h200-58448a1/tune.md), the same for
#: causal and full: hd 128 both passes in one launch with 64×64 tiles, 4 warps, 2 stages (1.26× the first
#: guess, 32×128 / 128×64 with 8 warps); hd 64 32×64 / 64×32, 4 warps, 3 stages (1.09×).
CONFIGS: dict[int, dict[str, int | bool]] = {
    64: {"BLOCK_M1": 32, "BLOCK_N1": 64, "BLOCK_M2": 64, "BLOCK_N2": 32, "num_warps": 4, "num_stages": 3},
    128: {"BLOCK_M1": 64, "BLOCK_N1": 64, "BLOCK_M2": 64, "BLOCK_N2": 64, "num_warps": 4, "num_stages": 2,
          "fused": True},
}  # fmt: skip
INTERPRETER_CONFIG: dict[str, int | bool] = {
    "BLOCK_M1": 16, "BLOCK_N1": 32, "BLOCK_M2": 32, "BLOCK_N2": 16, "num_warps": 4, "num_stages": 1,
}  # fmt: skip


@triton.jit
def _delta_kernel(o_ptr, do_ptr, delta_ptr, S, HEAD_D: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bh = tl.program_id(1).to(tl.int64)
    ok = rows < S
    offs = bh * S * HEAD_D + rows[:, None] * HEAD_D + tl.arange(0, HEAD_D)[None, :]
    o = tl.load(o_ptr + offs, mask=ok[:, None], other=0.0).to(tl.float32)
    do = tl.load(do_ptr + offs, mask=ok[:, None], other=0.0).to(tl.float32)
    tl.store(delta_ptr + bh * S + rows, tl.sum(o * do, axis=1), mask=ok)


@triton.jit
def _load_rows(ptr, rows, S, HEAD_D: tl.constexpr, EVEN: tl.constexpr):
    offs = rows[:, None] * HEAD_D + tl.arange(0, HEAD_D)[None, :]
    if EVEN:
        return tl.load(ptr + offs)
    return tl.load(ptr + offs, mask=(rows < S)[:, None], other=0.0)


@triton.jit
def _load_vec(ptr, rows, S, EVEN: tl.constexpr):
    if EVEN:
        return tl.load(ptr + rows)
    return tl.load(ptr + rows, mask=rows < S, other=0.0)


@triton.jit
def _dkdv_step(dk, dv, k, v, q_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, offs_n, start_m, bh, S, qk_scale, scale,
               MASK: tl.constexpr, HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, EVEN: tl.constexpr,
               ATOMIC_DQ: tl.constexpr, UPCAST: tl.constexpr):  # fmt: skip
    """One query block against this program's keys, in the transposed frame (rows = keys)."""
    offs_m = start_m + tl.arange(0, BLOCK_M)
    q = _load_rows(q_ptr, offs_m, S, HEAD_D, EVEN)
    do = _load_rows(do_ptr, offs_m, S, HEAD_D, EVEN)
    lse2 = _load_vec(lse_ptr, offs_m, S, EVEN) * 1.4426950408889634
    delta = _load_vec(delta_ptr, offs_m, S, EVEN)
    if UPCAST:  # the interpreter's low-precision dot is wrong; the GPU path never takes this branch
        q, do = q.to(tl.float32), do.to(tl.float32)
    p_t = tl.exp2(tl.dot(k, tl.trans(q)) * qk_scale - lse2[None, :])
    if MASK:
        keep = (offs_m < S)[None, :] & (offs_n < S)[:, None]
        if MASK == 2:
            keep = keep & (offs_m[None, :] >= offs_n[:, None])
        p_t = tl.where(keep, p_t, 0.0)
    dv = tl.dot(p_t.to(do.dtype), do, dv)
    ds_t = p_t * (tl.dot(v, tl.trans(do)) - delta[None, :])
    dk = tl.dot(ds_t.to(q.dtype), q, dk)
    if ATOMIC_DQ:
        dq = tl.dot(tl.trans(ds_t.to(k.dtype)), k) * scale
        if ATOMIC_DQ == 1:  # element by element, from registers
            dq_offs = offs_m[:, None] * HEAD_D + tl.arange(0, HEAD_D)[None, :]
            tl.atomic_add(dq_ptr + dq_offs, dq, mask=(offs_m < S)[:, None], sem="relaxed")
        else:  # the whole tile in one bulk reduction by the TMA unit; rows past S are outside the box
            dq_ptr.atomic_add([bh, start_m, 0], dq[None, :, :])
    return dk, dv


@triton.jit
def _dkdv_role(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, dq_ptr, S, qk_scale, scale,
               start_n, bh, CAUSAL: tl.constexpr, HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr, EVEN: tl.constexpr, ATOMIC_DQ: tl.constexpr, NUM_STAGES: tl.constexpr,
               UPCAST: tl.constexpr):  # fmt: skip
    base = bh.to(tl.int64) * S * HEAD_D
    q_ptr, k_ptr, v_ptr, do_ptr = q_ptr + base, k_ptr + base, v_ptr + base, do_ptr + base
    if ATOMIC_DQ == 1:  # with 2, dq_ptr is a (B·H, S, D) tensor descriptor
        dq_ptr = dq_ptr + base
    lse_ptr, delta_ptr = lse_ptr + bh.to(tl.int64) * S, delta_ptr + bh.to(tl.int64) * S
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k = _load_rows(k_ptr, offs_n, S, HEAD_D, EVEN)
    v = _load_rows(v_ptr, offs_n, S, HEAD_D, EVEN)
    if UPCAST:
        k, v = k.to(tl.float32), v.to(tl.float32)
    dk = tl.zeros([BLOCK_N, HEAD_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_D], dtype=tl.float32)
    if CAUSAL:  # query blocks on the diagonal (masked), then every later block (unmasked)
        diag_lo = start_n * BLOCK_N
        diag_hi = tl.minimum(diag_lo + BLOCK_N, S)
        for start_m in tl.range(diag_lo, diag_hi, BLOCK_M, num_stages=NUM_STAGES):
            dk, dv = _dkdv_step(
                dk, dv, k, v, q_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, offs_n, start_m, bh, S, qk_scale, scale,
                2, HEAD_D, BLOCK_M, EVEN, ATOMIC_DQ, UPCAST,
            )  # fmt: skip
        lo = diag_lo + BLOCK_N
    else:
        lo = 0
    for start_m in tl.range(lo, S, BLOCK_M, num_stages=NUM_STAGES):
        dk, dv = _dkdv_step(
            dk, dv, k, v, q_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, offs_n, start_m, bh, S, qk_scale, scale,
            0 if EVEN else 1, HEAD_D, BLOCK_M, EVEN, ATOMIC_DQ, UPCAST,
        )  # fmt: skip
    offs = offs_n[:, None] * HEAD_D + tl.arange(0, HEAD_D)[None, :]
    n_ok = (offs_n < S)[:, None]
    tl.store(dk_ptr + base + offs, (dk * scale).to(dk_ptr.dtype.element_ty), mask=n_ok)
    tl.store(dv_ptr + base + offs, dv.to(dv_ptr.dtype.element_ty), mask=n_ok)


@triton.jit
def _dq_step(dq, q, do, lse2, delta, k_ptr, v_ptr, offs_m, start_n, S, qk_scale, MASK: tl.constexpr,
             HEAD_D: tl.constexpr, BLOCK_N: tl.constexpr, EVEN: tl.constexpr, UPCAST: tl.constexpr):  # fmt: skip
    offs_n = start_n + tl.arange(0, BLOCK_N)
    k = _load_rows(k_ptr, offs_n, S, HEAD_D, EVEN)
    v = _load_rows(v_ptr, offs_n, S, HEAD_D, EVEN)
    if UPCAST:
        k, v = k.to(tl.float32), v.to(tl.float32)
    p = tl.exp2(tl.dot(q, tl.trans(k)) * qk_scale - lse2[:, None])
    if MASK:
        keep = (offs_m < S)[:, None] & (offs_n < S)[None, :]
        if MASK == 2:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        p = tl.where(keep, p, 0.0)
    ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
    return tl.dot(ds.to(k.dtype), k, dq)


@triton.jit
def _dq_role(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, S, qk_scale, scale, start_m, bh,
             CAUSAL: tl.constexpr, HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             EVEN: tl.constexpr, NUM_STAGES: tl.constexpr, UPCAST: tl.constexpr):  # fmt: skip
    base = bh.to(tl.int64) * S * HEAD_D
    k_ptr, v_ptr = k_ptr + base, v_ptr + base
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = _load_rows(q_ptr + base, offs_m, S, HEAD_D, EVEN)
    do = _load_rows(do_ptr + base, offs_m, S, HEAD_D, EVEN)
    if UPCAST:
        q, do = q.to(tl.float32), do.to(tl.float32)
    lse2 = _load_vec(lse_ptr + bh.to(tl.int64) * S, offs_m, S, EVEN) * 1.4426950408889634
    delta = _load_vec(delta_ptr + bh.to(tl.int64) * S, offs_m, S, EVEN)
    dq = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    if CAUSAL:  # keys strictly left of the diagonal (unmasked), then the diagonal block(s)
        full_hi = start_m * BLOCK_M
    else:
        full_hi = S
    for start_n in tl.range(0, full_hi, BLOCK_N, num_stages=NUM_STAGES):
        dq = _dq_step(
            dq, q, do, lse2, delta, k_ptr, v_ptr, offs_m, start_n, S, qk_scale, 0 if EVEN else 1, HEAD_D,
            BLOCK_N, EVEN, UPCAST,
        )  # fmt: skip
    if CAUSAL:
        for start_n in tl.range(full_hi, tl.minimum(full_hi + BLOCK_M, S), BLOCK_N, num_stages=NUM_STAGES):
            dq = _dq_step(
                dq, q, do, lse2, delta, k_ptr, v_ptr, offs_m, start_n, S, qk_scale, 2, HEAD_D, BLOCK_N, EVEN,
                UPCAST,
            )  # fmt: skip
    offs = offs_m[:, None] * HEAD_D + tl.arange(0, HEAD_D)[None, :]
    tl.store(dq_ptr + base + offs, (dq * scale).to(dq_ptr.dtype.element_ty), mask=(offs_m < S)[:, None])


@triton.jit
def _dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, dq_ptr, S, qk_scale, scale,
                 CAUSAL: tl.constexpr, HEAD_D: tl.constexpr, BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr,
                 EVEN: tl.constexpr, ATOMIC_DQ: tl.constexpr, NUM_STAGES: tl.constexpr,
                 UPCAST: tl.constexpr):  # fmt: skip
    _dkdv_role(
        q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, dq_ptr, S, qk_scale, scale,
        tl.program_id(0), tl.program_id(1), CAUSAL, HEAD_D, BLOCK_M1, BLOCK_N1, EVEN, ATOMIC_DQ, NUM_STAGES,
        UPCAST,
    )  # fmt: skip


@triton.jit
def _dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, S, qk_scale, scale,
               CAUSAL: tl.constexpr, HEAD_D: tl.constexpr, BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr,
               EVEN: tl.constexpr, NUM_STAGES: tl.constexpr, UPCAST: tl.constexpr):  # fmt: skip
    _dq_role(
        q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, S, qk_scale, scale, tl.program_id(0),
        tl.program_id(1), CAUSAL, HEAD_D, BLOCK_M2, BLOCK_N2, EVEN, NUM_STAGES, UPCAST,
    )  # fmt: skip


@triton.jit
def _fused_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, dq_ptr, S, qk_scale, scale,
                  N_KV_BLOCKS, N_Q_BLOCKS, CAUSAL: tl.constexpr, HEAD_D: tl.constexpr, BLOCK_M1: tl.constexpr,
                  BLOCK_N1: tl.constexpr, BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr, EVEN: tl.constexpr,
                  NUM_STAGES: tl.constexpr, UPCAST: tl.constexpr):  # fmt: skip
    """Both passes in one launch: program_id(2) = 0 is a dk/dv program, 1 a dq program."""
    pid = tl.program_id(0)
    if tl.program_id(2) == 0:
        if pid < N_KV_BLOCKS:
            _dkdv_role(
                q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, dq_ptr, S, qk_scale, scale,
                pid, tl.program_id(1), CAUSAL, HEAD_D, BLOCK_M1, BLOCK_N1, EVEN, 0, NUM_STAGES, UPCAST,
            )  # fmt: skip
    else:
        if pid < N_Q_BLOCKS:
            _dq_role(
                q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, S, qk_scale, scale, pid,
                tl.program_id(1), CAUSAL, HEAD_D, BLOCK_M2, BLOCK_N2, EVEN, NUM_STAGES, UPCAST,
            )  # fmt: skip


def attention_backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    lse: torch.Tensor,
    do: torch.Tensor,
    causal: bool = False,
    sm_scale: float | None = None,
    *,
    config: dict[str, int | bool] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) for q, k, v, o, do of shape (B, H, S, D) (fp16/bf16) and the forward's fp32 lse (B, H, S),
    natural log (what ``attention.attention`` returns).

    ``config``: a launch of these Triton kernels (a CONFIGS entry), or ``{"GLUON": True}`` (optionally with
    ``"WS"``: an ``attention_backward_ws.CONFIGS`` entry) for the warp-specialised Gluon kernels where
    :func:`takes_gluon` says so (else the default Triton launch)."""
    if q.dim() != 4 or any(t.shape != q.shape for t in (k, v, o, do)):
        shapes = [tuple(t.shape) for t in (q, k, v, o, do)]
        raise ValueError(f"q, k, v, o, do must share a (B, H, S, D) shape: {shapes}")
    B, H, S, D = q.shape
    if lse.shape != (B, H, S):
        raise ValueError(f"lse must have shape {(B, H, S)}, got {tuple(lse.shape)}")
    if D not in (16, 32, 64, 128):
        raise ValueError(f"head dim {D} is not supported (16, 32, 64 or 128)")
    scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    q, k, v, o, do = (t.contiguous() for t in (q, k, v, o, do))
    lse = lse.contiguous().float()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if q.numel() == 0:
        return dq, dk, dv
    gpu = q.is_cuda and not interpreting()
    if takes_gluon(q, k, v, do, lse, config):
        delta = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
        _delta_kernel[(triton.cdiv(S, 64), B * H)](o, do, delta, S, HEAD_D=D, BLOCK=64, num_warps=4)
        attention_backward_ws.launch(
            q, k, v, do, lse, delta, dq, dk, dv, causal, scale, config and config.get("WS")
        )
        return dq, dk, dv
    if config is not None and "GLUON" in config:  # the rest of such a config is the Gluon launch's: not ours
        config = None
    cfg = dict(config or (CONFIGS.get(D, CONFIGS[64]) if gpu else INTERPRETER_CONFIG))
    bm1, bn1, bm2, bn2 = (int(cfg[key]) for key in ("BLOCK_M1", "BLOCK_N1", "BLOCK_M2", "BLOCK_N2"))
    if bn1 % bm1 or bm2 % bn2:
        raise ValueError(
            "BLOCK_N1 must be a multiple of BLOCK_M1, BLOCK_M2 of BLOCK_N2 (the causal diagonal)"
        )
    atomic, fused = bool(cfg.get("atomic_dq", False)), bool(cfg.get("fused", False))
    tma_dq = bool(cfg.get("tma_dq", False))
    if atomic and fused:
        raise ValueError("atomic_dq and fused exclude each other (with atomics there is no dq pass to fuse)")
    if tma_dq and not atomic:
        raise ValueError("tma_dq is a form of atomic_dq: set both")
    if fused and any(cfg.get(f"{key}2", cfg[key]) != cfg[key] for key in ("num_warps", "num_stages")):
        raise ValueError("a fused launch has one num_warps and num_stages for both passes")
    delta = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
    _delta_kernel[(triton.cdiv(S, 64), B * H)](o, do, delta, S, HEAD_D=D, BLOCK=64, num_warps=4)
    even = S % bn1 == 0 and S % bm1 == 0 and S % bm2 == 0 and S % bn2 == 0
    common = {"CAUSAL": causal, "HEAD_D": D, "EVEN": even, "NUM_STAGES": int(cfg["num_stages"]),
              "UPCAST": interpreting(), "num_warps": int(cfg["num_warps"]), "num_stages": int(cfg["num_stages"])}  # fmt: skip
    qk_scale = scale * LOG2E
    if fused:
        n_kv, n_q = triton.cdiv(S, bn1), triton.cdiv(S, bm2)
        _fused_kernel[(max(n_kv, n_q), B * H, 2)](
            q, k, v, do, lse, delta, dk, dv, dq, S, qk_scale, scale, n_kv, n_q, BLOCK_M1=bm1, BLOCK_N1=bn1,
            BLOCK_M2=bm2, BLOCK_N2=bn2, **common,
        )  # fmt: skip
        return dq, dk, dv
    dq_acc = torch.zeros((B, H, S, D), device=q.device, dtype=torch.float32) if atomic else dq
    dq_arg = dq_acc
    # the interpreter has no TMA reduction: there the same launch adds element by element (the GPU test and the
    # cuda:90 lowering hold the descriptor form)
    bulk = tma_dq and not interpreting()
    if bulk:
        dq_arg = TensorDescriptor(dq_acc, [B * H, S, D], [S * D, D, 1], [1, bm1, D])
    _dkdv_kernel[(triton.cdiv(S, bn1), B * H)](
        q, k, v, do, lse, delta, dk, dv, dq_arg, S, qk_scale, scale, BLOCK_M1=bm1, BLOCK_N1=bn1,
        ATOMIC_DQ=(2 if bulk else 1) if atomic else 0, **common,
    )  # fmt: skip
    if atomic:
        dq.copy_(dq_acc)
        return dq, dk, dv
    common.update(
        num_warps=int(cfg.get("num_warps2", cfg["num_warps"])),
        num_stages=int(cfg.get("num_stages2", cfg["num_stages"])),
        NUM_STAGES=int(cfg.get("num_stages2", cfg["num_stages"])),
    )
    _dq_kernel[(triton.cdiv(S, bm2), B * H)](
        q, k, v, do, lse, delta, dq, S, qk_scale, scale, BLOCK_M2=bm2, BLOCK_N2=bn2, **common
    )
    return dq, dk, dv


def takes_gluon(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    do: torch.Tensor,
    lse: torch.Tensor,
    config: dict[str, int | bool] | None = None,
) -> bool:
    """Whether :func:`attention_backward` runs the Gluon kernels on these operands (contiguous, lse in fp32):
    asked for (``GLUON`` in ``config``, or ``GLUON_DEFAULT`` without one), on a Hopper GPU, where
    :func:`attention_backward_ws.usable` holds for the launch (``config["WS"]`` or its CONFIGS entry)."""
    asked = GLUON_DEFAULT if config is None else bool(config.get("GLUON", False))
    ws_cfg = config.get("WS") if config else None
    return (
        asked and q.is_cuda and not interpreting() and attention_backward_ws.usable(q, k, v, do, lse, ws_cfg)
    )


def flops(b: int, h: int, s: int, d: int, causal: bool) -> int:
    """2.5× the forward's: five S×S×D products per (batch, head); causal does about half."""
    full = 10 * b * h * s * s * d
    return full // 2 if causal else full


def bytes_moved(b: int, h: int, s: int, d: int, elem_size: int) -> int:
    """Read q, k, v, o, do and the fp32 lse; write dq, dk, dv (Δ's fp32 round trip is ours alone: not counted)."""
    return 8 * b * h * s * d * elem_size + 4 * b * h * s
