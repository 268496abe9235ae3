"""FlashAttention backward for Hopper in Gluon: dk/dv and dq each in a warp-specialised kernel, a loader warp and
computing warpgroups, the same deterministic split as ``attention_backward.py`` (no atomics).

Why: the fastest peers' backward (cuDNN's) is one warp-specialised kernel, 12 warps at 168 registers a thread
(``perf/targets.toml``, ``attention_backward-bf16``), while Triton's compiler gives every warp of our Triton
backward one role and waits for each matrix product before the exponentials. Here, as in ``attention_ws.py``:

* :func:`_dkdv_kernel`: a tile is ``NUM_WG × 64`` keys of one batch·head. The loader warp copies each computing
  warpgroup's K and V boxes once, then streams the query blocks' q and do (``BLOCK_M`` rows each, one "ready"
  barrier for the pair) through a ring of ``STAGES`` slots that every computing warpgroup hands back
  ("empty", counted to ``NUM_WG``). A computing warpgroup keeps its 64 keys' dk and dv in registers and, per
  query block, issues ``Sᵀ = K·qᵀ`` and ``dPᵀ = V·doᵀ`` together, rebuilds ``Pᵀ = exp2(Sᵀ·scale·log2e −
  lse·log2e)`` (causal: zero above the diagonal), then issues ``dv += Pᵀ·do`` and ``dk += dSᵀ·q`` with ``dSᵀ =
  Pᵀ ⊙ (dPᵀ − Δ)`` computed while the first of them runs.
* :func:`_dq_kernel`: a tile is ``NUM_WG × 64`` queries; each warpgroup's q and do boxes stay in shared memory, the
  loader streams K and V blocks (``BLOCK_N2`` keys), and a warpgroup issues ``S = q·Kᵀ`` and ``dP = do·Vᵀ``
  together, then ``dq += dS·K``.

The Δ = rowsum(do ⊙ o) pre-pass is the Triton one (``attention_backward._delta_kernel``). Tiles go longest first
with the heads on the fast axis (causal: the key blocks nearest the start, the query blocks nearest the end).
Same contract as :func:`attention_backward.attention_backward`: contiguous (B, H, S, D) fp16/bf16 q, k, v, do,
the forward's natural-log fp32 lse; S a multiple of both kernels' tiles (no tail masks) and a GPU of compute
capability 9.x: :func:`usable` says whether a call qualifies, and ``attention_backward`` runs the Triton kernels
otherwise. Opt-in there (``config={"GLUON": True}``): on an H100 (H100-80GB-HBM3 run 2026-12-07 (e5686c3)) the
gradients were right, but the kernels ran at 0.708× the fastest SDPA backend against 0.789× for the Triton
backward (``benchmarks/attention_backward_ws.py``); at head dim 128 the 64-query blocks, which spill, were
faster than the 32-query default (0.717-0.842× a row against 0.646-0.759×). Where the time goes is not
measured yet: each product's A operand (K or V for dk/dv, q or do for dq) is read from shared memory, and a
warpgroup waits for all its products at the end of every block.
"""

from __future__ import annotations

from ._gluon import (
    GluonDescriptor,
    gl,
    gluon,
    mbarrier,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from ._gluon import release as _release
from ._gluon import tma_load as _tma_load

#: Launches by head dim. dk/dv: query blocks of ``BLOCK_M`` rows, ``STAGES`` ring slots for q and do; dq: key
#: blocks of ``BLOCK_N2``, ``STAGES2`` slots for K and V; both ``NUM_WG`` computing warpgroups of 64 rows (keys
#: for dk/dv, queries for dq) at ``COMPUTE_REGS`` registers and a loader warp at ``LOAD_REGS``. First choices,
#: the largest tiles that compile for sm_90 without spilling (Triton 3.6; tests/test_reference_lowering.py): at
#: head dim 128 the dk/dv pass spills 128-204 bytes with 64-query blocks (its dk and dv tiles hold 128 registers
#: a thread), none with 32; timed, the spilling 64-query blocks were faster (see the module's docstring).
_LAUNCH: dict[str, int] = {
    "BLOCK_M": 64, "STAGES": 2, "BLOCK_N2": 64, "STAGES2": 2, "NUM_WG": 2, "LOAD_REGS": 24, "COMPUTE_REGS": 240,
}  # fmt: skip
CONFIGS: dict[int, dict[str, int]] = {
    64: dict(_LAUNCH),
    128: {**_LAUNCH, "BLOCK_M": 32, "STAGES": 3, "BLOCK_N2": 128},
}
WG_ROWS = 64  # the rows of one computing warpgroup's box: one wgmma's M

if gluon is not None:
    # the key blocks a tile of queries sees (causal: up to its last query): the forward's count
    from .attention_ws import _n_blocks

    _WG_ROWS = gl.constexpr(WG_ROWS)

    @gluon.jit
    def _tile(t, n_blocks, BH, LONGEST_LAST: gl.constexpr):
        # tile t -> (block, batch·head), heads on the fast axis, so one wave holds the same block of every head;
        # the blocks in the order that starts the longest first (dk/dv: causal key blocks near the start see the
        # most queries; dq: causal query blocks near the end see the most keys)
        if LONGEST_LAST:
            return n_blocks - 1 - t // BH, t % BH
        else:
            return t // BH, t % BH

    # ---- dk, dv --------------------------------------------------------------------------------------------

    @gluon.jit
    def _dkdv_load(
        desc_q, desc_do, desc_k, desc_v, q_smem, do_smem, k_smem, v_smem, qd_ready, qd_empty, kv_ready, kv_empty,
        S, n_n, BH, n_tiles, CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr, STAGES: gl.constexpr,
        NUM_WG: gl.constexpr,
    ):  # fmt: skip
        BLOCK_N: gl.constexpr = NUM_WG * _WG_ROWS
        c = 0  # query blocks loaded by this program over all its tiles: the ring's slot and phase
        it = 0
        for t in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
            start_n, bh = _tile(t, n_n, BH, False)
            row0 = bh * S
            # a fresh barrier has finished "phase -1": the first wait passes
            mbarrier.wait(kv_empty, (it & 1) ^ 1)
            mbarrier.expect(kv_ready, NUM_WG * (desc_k.block_type.nbytes + desc_v.block_type.nbytes))
            for w in gl.static_range(NUM_WG):
                _tma_load(desc_k, [row0 + start_n * BLOCK_N + w * _WG_ROWS, 0], kv_ready, k_smem.index(w))
                _tma_load(desc_v, [row0 + start_n * BLOCK_N + w * _WG_ROWS, 0], kv_ready, v_smem.index(w))
            lo = (
                start_n * BLOCK_N if CAUSAL else 0
            )  # causal: queries before the tile's first key see none of it
            for m0 in range(lo, S, BLOCK_M):
                slot = c % STAGES
                mbarrier.wait(qd_empty.index(slot), ((c // STAGES) & 1) ^ 1)
                mbarrier.expect(qd_ready.index(slot), desc_q.block_type.nbytes + desc_do.block_type.nbytes)
                _tma_load(desc_q, [row0 + m0, 0], qd_ready.index(slot), q_smem.index(slot))
                _tma_load(desc_do, [row0 + m0, 0], qd_ready.index(slot), do_smem.index(slot))
                c += 1
            it += 1

    @gluon.jit
    def _dkdv_compute(
        q_smem, do_smem, k_smem, v_smem, qd_ready, qd_empty, kv_ready, kv_empty, lse_ptr, delta_ptr, dk_ptr,
        dv_ptr, S, qk_scale, scale, n_n, BH, n_tiles, CAUSAL: gl.constexpr, HEAD_D: gl.constexpr,
        BLOCK_M: gl.constexpr, STAGES: gl.constexpr, WG: gl.constexpr, NUM_WG: gl.constexpr,
    ):  # fmt: skip
        # one warpgroup and its _WG_ROWS keys of each tile, in the transposed frame (rows = keys, columns = queries)
        BLOCK_N: gl.constexpr = NUM_WG * _WG_ROWS
        st_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_M, 16]
        )
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_D, 16]
        )
        op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)
        cols: gl.constexpr = gl.SliceLayout(0, st_layout)
        dtype: gl.constexpr = q_smem.dtype
        zero_st = gl.zeros([_WG_ROWS, BLOCK_M], gl.float32, st_layout)
        k_box = k_smem.index(WG)
        v_box = v_smem.index(WG)

        c = 0
        it = 0
        for t in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
            start_n, bh = _tile(t, n_n, BH, False)
            n0 = start_n * BLOCK_N + WG * _WG_ROWS  # this warpgroup's first key
            vec_base = bh.to(gl.int64) * S
            dk = gl.zeros([_WG_ROWS, HEAD_D], gl.float32, acc_layout)
            dv = gl.zeros([_WG_ROWS, HEAD_D], gl.float32, acc_layout)
            mbarrier.wait(kv_ready, it & 1)
            lo = start_n * BLOCK_N if CAUSAL else 0
            for m0 in range(lo, S, BLOCK_M):
                slot = c % STAGES
                offs_m = m0 + gl.arange(0, BLOCK_M, layout=cols)
                # the queries' lse (base 2) and Δ, fetched before the wait so their latency hides under it
                lse2 = gl.load(lse_ptr + vec_base + offs_m) * 1.4426950408889634
                delta = gl.load(delta_ptr + vec_base + offs_m)
                mbarrier.wait(qd_ready.index(slot), (c // STAGES) & 1)
                q_t = q_smem.index(slot)
                do_t = do_smem.index(slot)
                st_tok = warpgroup_mma(k_box, q_t.permute((1, 0)), zero_st, use_acc=False, is_async=True)
                dpt_tok = warpgroup_mma(v_box, do_t.permute((1, 0)), zero_st, use_acc=False, is_async=True)
                st = warpgroup_mma_wait(1, deps=(st_tok,))
                p_t = gl.exp2(st * qk_scale - lse2[None, :])
                if CAUSAL:
                    if (
                        m0 < n0 + _WG_ROWS
                    ):  # a block reaching the diagonal: a query sees the keys up to itself
                        keys = n0 + gl.arange(0, _WG_ROWS, layout=gl.SliceLayout(1, st_layout))
                        p_t = gl.where(offs_m[None, :] >= keys[:, None], p_t, 0.0)
                dv_tok = warpgroup_mma(gl.convert_layout(p_t.to(dtype), op_layout), do_t, dv, is_async=True)
                dpt = warpgroup_mma_wait(1, deps=(dpt_tok,))
                ds_t = p_t * (dpt - delta[None, :])
                dk_tok = warpgroup_mma(gl.convert_layout(ds_t.to(dtype), op_layout), q_t, dk, is_async=True)
                dv, dk = warpgroup_mma_wait(0, deps=(dv_tok, dk_tok))
                _release(qd_empty.index(slot))
                c += 1
            _release(
                kv_empty
            )  # this warpgroup is done with its K and V boxes: the loader may bring the next tile's
            offs_n = n0 + gl.arange(0, _WG_ROWS, layout=gl.SliceLayout(1, acc_layout))
            offs_d = gl.arange(0, HEAD_D, layout=gl.SliceLayout(0, acc_layout))
            offs = vec_base * HEAD_D + offs_n[:, None] * HEAD_D + offs_d[None, :]
            gl.store(dk_ptr + offs, (dk * scale).to(dtype))
            gl.store(dv_ptr + offs, dv.to(dtype))
            it += 1

    @gluon.jit
    def _dkdv_kernel(
        desc_q, desc_do, desc_k, desc_v, lse_ptr, delta_ptr, dk_ptr, dv_ptr, S, qk_scale, scale, n_n, BH, n_tiles,
        CAUSAL: gl.constexpr, HEAD_D: gl.constexpr, BLOCK_M: gl.constexpr, STAGES: gl.constexpr,
        LOAD_REGS: gl.constexpr, COMPUTE_REGS: gl.constexpr, NUM_WG: gl.constexpr,
    ):  # fmt: skip
        q_smem = gl.allocate_shared_memory(desc_q.dtype, [STAGES] + desc_q.block_type.shape, desc_q.layout)
        do_smem = gl.allocate_shared_memory(
            desc_do.dtype, [STAGES] + desc_do.block_type.shape, desc_do.layout
        )
        k_smem = gl.allocate_shared_memory(desc_k.dtype, [NUM_WG] + desc_k.block_type.shape, desc_k.layout)
        v_smem = gl.allocate_shared_memory(desc_v.dtype, [NUM_WG] + desc_v.block_type.shape, desc_v.layout)
        qd_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        qd_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        kv_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        kv_empty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(kv_ready, count=1)
        mbarrier.init(kv_empty, count=NUM_WG)
        for i in gl.static_range(STAGES):
            mbarrier.init(qd_ready.index(i), count=1)
            mbarrier.init(qd_empty.index(i), count=NUM_WG)  # every computing warpgroup hands a slot back
        # fmt: off
        # (written out for two warpgroups: the JIT does not keep a function in a variable; usable() asks for 2)
        gl.static_assert(NUM_WG == 2, "two computing warpgroups")
        gl.warp_specialize(
            [
                (_dkdv_compute,
                 (q_smem, do_smem, k_smem, v_smem, qd_ready, qd_empty, kv_ready, kv_empty, lse_ptr, delta_ptr,
                  dk_ptr, dv_ptr, S, qk_scale, scale, n_n, BH, n_tiles, CAUSAL, HEAD_D, BLOCK_M, STAGES, 0, NUM_WG)),
                (_dkdv_compute,
                 (q_smem, do_smem, k_smem, v_smem, qd_ready, qd_empty, kv_ready, kv_empty, lse_ptr, delta_ptr,
                  dk_ptr, dv_ptr, S, qk_scale, scale, n_n, BH, n_tiles, CAUSAL, HEAD_D, BLOCK_M, STAGES, 1, NUM_WG)),
                (_dkdv_load,
                 (desc_q, desc_do, desc_k, desc_v, q_smem, do_smem, k_smem, v_smem, qd_ready, qd_empty, kv_ready,
                  kv_empty, S, n_n, BH, n_tiles, CAUSAL, BLOCK_M, STAGES, NUM_WG)),
            ],
            [4, 1],
            [COMPUTE_REGS, LOAD_REGS],
        )
        # fmt: on

    # ---- dq ------------------------------------------------------------------------------------------------

    @gluon.jit
    def _dq_load(
        desc_q, desc_do, desc_k, desc_v, q_smem, do_smem, k_smem, v_smem, qd_ready, qd_empty, kv_ready, kv_empty,
        S, n_m, BH, n_tiles, CAUSAL: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
        NUM_WG: gl.constexpr,
    ):  # fmt: skip
        BLOCK_M: gl.constexpr = NUM_WG * _WG_ROWS
        c = 0  # key blocks loaded by this program over all its tiles
        it = 0
        for t in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
            start_m, bh = _tile(t, n_m, BH, CAUSAL)
            row0 = bh * S
            mbarrier.wait(qd_empty, (it & 1) ^ 1)
            mbarrier.expect(qd_ready, NUM_WG * (desc_q.block_type.nbytes + desc_do.block_type.nbytes))
            for w in gl.static_range(NUM_WG):
                _tma_load(desc_q, [row0 + start_m * BLOCK_M + w * _WG_ROWS, 0], qd_ready, q_smem.index(w))
                _tma_load(desc_do, [row0 + start_m * BLOCK_M + w * _WG_ROWS, 0], qd_ready, do_smem.index(w))
            for j in range(_n_blocks(start_m * BLOCK_M, S, CAUSAL, BLOCK_M, BLOCK_N)):
                slot = c % STAGES
                mbarrier.wait(kv_empty.index(slot), ((c // STAGES) & 1) ^ 1)
                mbarrier.expect(kv_ready.index(slot), desc_k.block_type.nbytes + desc_v.block_type.nbytes)
                _tma_load(desc_k, [row0 + j * BLOCK_N, 0], kv_ready.index(slot), k_smem.index(slot))
                _tma_load(desc_v, [row0 + j * BLOCK_N, 0], kv_ready.index(slot), v_smem.index(slot))
                c += 1
            it += 1

    @gluon.jit
    def _dq_compute(
        q_smem, do_smem, k_smem, v_smem, qd_ready, qd_empty, kv_ready, kv_empty, lse_ptr, delta_ptr, dq_ptr, S,
        qk_scale, scale, n_m, BH, n_tiles, CAUSAL: gl.constexpr, HEAD_D: gl.constexpr, BLOCK_N: gl.constexpr,
        STAGES: gl.constexpr, WG: gl.constexpr, NUM_WG: gl.constexpr,
    ):  # fmt: skip
        BLOCK_M: gl.constexpr = NUM_WG * _WG_ROWS
        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16]
        )
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_D, 16]
        )
        op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)
        rows: gl.constexpr = gl.SliceLayout(1, s_layout)
        dtype: gl.constexpr = q_smem.dtype
        zero_s = gl.zeros([_WG_ROWS, BLOCK_N], gl.float32, s_layout)
        q_box = q_smem.index(WG)
        do_box = do_smem.index(WG)

        c = 0
        it = 0
        for t in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
            start_m, bh = _tile(t, n_m, BH, CAUSAL)
            m0 = start_m * BLOCK_M + WG * _WG_ROWS  # this warpgroup's first query
            vec_base = bh.to(gl.int64) * S
            offs_m = m0 + gl.arange(0, _WG_ROWS, layout=rows)
            lse2 = gl.load(lse_ptr + vec_base + offs_m) * 1.4426950408889634
            delta = gl.load(delta_ptr + vec_base + offs_m)
            dq = gl.zeros([_WG_ROWS, HEAD_D], gl.float32, acc_layout)
            mbarrier.wait(qd_ready, it & 1)
            for j in range(_n_blocks(start_m * BLOCK_M, S, CAUSAL, BLOCK_M, BLOCK_N)):
                slot = c % STAGES
                mbarrier.wait(kv_ready.index(slot), (c // STAGES) & 1)
                k_t = k_smem.index(slot)
                s_tok = warpgroup_mma(q_box, k_t.permute((1, 0)), zero_s, use_acc=False, is_async=True)
                dp_tok = warpgroup_mma(do_box, v_smem.index(slot).permute((1, 0)), zero_s, use_acc=False,
                                       is_async=True)  # fmt: skip
                s = warpgroup_mma_wait(1, deps=(s_tok,))
                p = gl.exp2(s * qk_scale - lse2[:, None])
                if CAUSAL:
                    if (j + 1) * BLOCK_N > m0:  # a block reaching the diagonal
                        keys = j * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
                        p = gl.where(offs_m[:, None] >= keys[None, :], p, 0.0)
                dp = warpgroup_mma_wait(0, deps=(dp_tok,))
                ds = p * (dp - delta[:, None])
                dq = warpgroup_mma(gl.convert_layout(ds.to(dtype), op_layout), k_t, dq)
                _release(kv_empty.index(slot))
                c += 1
            _release(qd_empty)
            offs_r = m0 + gl.arange(0, _WG_ROWS, layout=gl.SliceLayout(1, acc_layout))
            offs_d = gl.arange(0, HEAD_D, layout=gl.SliceLayout(0, acc_layout))
            gl.store(
                dq_ptr + vec_base * HEAD_D + offs_r[:, None] * HEAD_D + offs_d[None, :],
                (dq * scale).to(dtype),
            )
            it += 1

    @gluon.jit
    def _dq_kernel(
        desc_q, desc_do, desc_k, desc_v, lse_ptr, delta_ptr, dq_ptr, S, qk_scale, scale, n_m, BH, n_tiles,
        CAUSAL: gl.constexpr, HEAD_D: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
        LOAD_REGS: gl.constexpr, COMPUTE_REGS: gl.constexpr, NUM_WG: gl.constexpr,
    ):  # fmt: skip
        q_smem = gl.allocate_shared_memory(desc_q.dtype, [NUM_WG] + desc_q.block_type.shape, desc_q.layout)
        do_smem = gl.allocate_shared_memory(
            desc_do.dtype, [NUM_WG] + desc_do.block_type.shape, desc_do.layout
        )
        k_smem = gl.allocate_shared_memory(desc_k.dtype, [STAGES] + desc_k.block_type.shape, desc_k.layout)
        v_smem = gl.allocate_shared_memory(desc_v.dtype, [STAGES] + desc_v.block_type.shape, desc_v.layout)
        qd_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        qd_empty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        kv_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        kv_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        mbarrier.init(qd_ready, count=1)
        mbarrier.init(qd_empty, count=NUM_WG)
        for i in gl.static_range(STAGES):
            mbarrier.init(kv_ready.index(i), count=1)
            mbarrier.init(kv_empty.index(i), count=NUM_WG)
        # fmt: off
        gl.static_assert(NUM_WG == 2, "two computing warpgroups")
        gl.warp_specialize(
            [
                (_dq_compute,
                 (q_smem, do_smem, k_smem, v_smem, qd_ready, qd_empty, kv_ready, kv_empty, lse_ptr, delta_ptr,
                  dq_ptr, S, qk_scale, scale, n_m, BH, n_tiles, CAUSAL, HEAD_D, BLOCK_N, STAGES, 0, NUM_WG)),
                (_dq_compute,
                 (q_smem, do_smem, k_smem, v_smem, qd_ready, qd_empty, kv_ready, kv_empty, lse_ptr, delta_ptr,
                  dq_ptr, S, qk_scale, scale, n_m, BH, n_tiles, CAUSAL, HEAD_D, BLOCK_N, STAGES, 1, NUM_WG)),
                (_dq_load,
                 (desc_q, desc_do, desc_k, desc_v, q_smem, do_smem, k_smem, v_smem, qd_ready, qd_empty, kv_ready,
                  kv_empty, S, n_m, BH, n_tiles, CAUSAL, BLOCK_N, STAGES, NUM_WG)),
            ],
            [4, 1],
            [COMPUTE_REGS, LOAD_REGS],
        )
        # fmt: on


def usable(q, k, v, do, lse, cfg: dict | None = None) -> bool:  # noqa: ANN001
    """Whether the Gluon backward takes this call: Gluon present, a CUDA GPU of compute capability 9.x, one
    contiguous 16-byte-aligned (B, H, S, D) bf16/fp16 layout for q, k, v and do, a contiguous fp32 lse, a head dim
    it has a launch for, and S a multiple of every tile (``NUM_WG × 64``, ``BLOCK_M``, ``BLOCK_N2``)."""
    import torch

    if gluon is None or not q.is_cuda or q.dtype not in (torch.bfloat16, torch.float16):
        return False
    if torch.cuda.get_device_capability(q.device)[0] != 9:
        return False
    cfg = cfg or CONFIGS.get(q.shape[-1])
    if cfg is None or int(cfg["NUM_WG"]) != 2:
        return False
    S = q.shape[2]
    if any(S % int(size) for size in (cfg["NUM_WG"] * WG_ROWS, cfg["BLOCK_M"], cfg["BLOCK_N2"])):
        return False
    if lse.dtype != torch.float32 or not lse.is_contiguous():
        return False
    return all(t.shape == q.shape and t.dtype == q.dtype and t.is_contiguous() and t.data_ptr() % 16 == 0
               for t in (q, k, v, do))  # fmt: skip


def launch(q, k, v, do, lse, delta, dq, dk, dv, causal: bool, scale: float, cfg: dict | None = None) -> None:  # noqa: ANN001
    """Run the Gluon dk/dv and dq kernels (:func:`usable` said yes) into dq, dk, dv, given Δ (fp32, (B, H, S))."""
    import triton

    B, H, S, D = q.shape
    cfg = cfg or CONFIGS[D]
    num_wg = int(cfg["NUM_WG"])
    rows = B * H * S
    el = gl.bfloat16 if str(q.dtype) == "torch.bfloat16" else gl.float16  # usable() allowed only these two
    qk_scale = scale * 1.4426950408889634
    regs = {"LOAD_REGS": int(cfg["LOAD_REGS"]), "COMPUTE_REGS": int(cfg["COMPUTE_REGS"]), "NUM_WG": num_wg}

    def desc(t, block_rows: int):  # noqa: ANN001, ANN202
        layout = gl.NVMMASharedLayout.get_default_for([block_rows, D], el)
        return GluonDescriptor(t, [rows, D], [D, 1], [block_rows, D], layout)

    bm = int(cfg["BLOCK_M"])
    n_n = S // (num_wg * WG_ROWS)
    _dkdv_kernel[(n_n * B * H,)](
        desc(q, bm), desc(do, bm), desc(k, WG_ROWS), desc(v, WG_ROWS), lse, delta, dk, dv, S, qk_scale, scale,
        n_n, B * H, n_n * B * H, CAUSAL=causal, HEAD_D=D, BLOCK_M=bm, STAGES=int(cfg["STAGES"]), **regs,
        num_warps=4,
    )  # fmt: skip
    bn2 = int(cfg["BLOCK_N2"])
    n_m = triton.cdiv(S, num_wg * WG_ROWS)
    _dq_kernel[(n_m * B * H,)](
        desc(q, WG_ROWS), desc(do, WG_ROWS), desc(k, bn2), desc(v, bn2), lse, delta, dq, S, qk_scale, scale,
        n_m, B * H, n_m * B * H, CAUSAL=causal, HEAD_D=D, BLOCK_N=bn2, STAGES=int(cfg["STAGES2"]), **regs,
        num_warps=4,
    )  # fmt: skip
