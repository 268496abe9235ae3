"""FlashAttention forward for Hopper in Gluon: a loader warp and two computing warpgroups, the scores of the next
key block in flight while this block's softmax runs (at head dim 64: three computing warpgroups, no early scores).

Why a second language: Triton's own compiler gives the forward one role for every warp and waits for every
matrix product before the exponentials (``wait_group 0``, tests/test_reference_lowering.py), so a warpgroup's
softmax never overlaps its tensor cores. FlashAttention-3's published design splits the work between warps that
load and warps that compute and keeps a product running under the softmax, and cuDNN's kernel launches the same
shape, 12 warps at 168 registers a thread (``perf/targets.toml``). Gluon, Triton's lower-level dialect, lets a kernel say both:

* ``gl.warp_specialize`` runs :func:`_load_partition` in one extra warp with 24 registers: for each tile it
  copies q (one box per computing warpgroup) and then the K and V blocks through the TMA unit into a ring of
  ``STAGES`` shared-memory slots, each slot guarded by "ready" barriers (the copy's bytes arrived) and "empty"
  barriers (every computing warpgroup is done with it); q has its own ready/empty pair;
* :func:`_compute_partition` runs once per computing warpgroup (``NUM_WG`` = 2: the default partition and a
  worker, 240 registers each; or 3 of 160 registers with 192-row tiles, at head dim 64 and without ``PIPE``,
  whose second score tile does not fit there), on its own ``BLOCK_M // NUM_WG`` query rows of the tile. With
  ``PIPE`` it issues ``S_j = q·K_jᵀ`` asynchronously, then ``O += P_{j-1}·V_{j-1}`` from registers, waits for ``S_j`` alone
  (``warpgroup_mma_wait(1)``) and computes its softmax while ``P_{j-1}·V_{j-1}`` runs, and only then waits for
  that product and rescales ``O``. With ``PINGPONG`` the warpgroups take turns to issue their products (one
  mbarrier each), so one's softmax overlaps another's products.

A program takes tiles ``pid, pid + grid, ...`` (one each by default; ``PERSISTENT`` launches one program per SM).
Same contract as :func:`attention.attention`: contiguous (B, H, S, D) q, k, v, ``o`` and the natural-log ``lse``.
It needs S to be a multiple of the key block (no key tail mask) and a GPU of compute capability 9.x;
:func:`usable` says whether a call qualifies, and :mod:`attention` falls back to the Triton kernels otherwise.
"""

from __future__ import annotations

import triton

from ._common import num_sms
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

#: Launches by head dim: tile sizes, K/V ring slots, whether the next scores are issued before this block's
#: softmax (``PIPE``), ping-pong, computing warpgroups (``NUM_WG``), the loader's and the computing warpgroups'
#: registers (optional: ``PERSISTENT``, ``REVERSE``). Chosen from `benchmarks/attention_ws.py` on H100s:
#: at head dim 128 two warpgroups of 240 registers, 2 or 3 slots within the runs' spread of each other; ping-pong
#: kept, though without it the six rows' geometric mean was ahead in four of five runs (1.004-1.025× cuDNN against
#: 0.990-1.011×; behind in the first, 1.008× against 1.040×; H100-80GB-HBM3 runs 2026-12-06 (94b849e), (ad36972),
#: (e0b94ae), (8906b98) and (4f01429)); under bench's protocol without it 0.970× (runs 0.947-1.012) against
#: the default's 0.965× (runs 0.942-1.010): no measured gain (H100-80GB-HBM3 run 2026-12-07 (e5686c3)). At head dim 64
#: three warpgroups of 160 registers without the early score product, 0.989× cuDNN against 0.926× for the
#: two-warpgroup launch on 4·32·4096·64 full and even causal (H100-80GB-HBM3 run 2026-12-06 (8906b98)). One
#: program per SM, the longest-first causal order and exponentials split onto the FMA units lost. Not measured
#: on an H200 yet.
_LAUNCH: dict[str, int | bool] = {
    "BLOCK_M": 128, "BLOCK_N": 128, "STAGES": 2, "PIPE": True, "PINGPONG": True, "NUM_WG": 2, "LOAD_REGS": 24,
    "COMPUTE_REGS": 240,
}  # fmt: skip
CONFIGS: dict[int, dict[str, int | bool]] = {
    64: {**_LAUNCH, "BLOCK_M": 192, "PIPE": False, "PINGPONG": False, "NUM_WG": 3, "COMPUTE_REGS": 160},
    128: dict(_LAUNCH),
}


if gluon is not None:

    @gluon.jit
    def _tile(t, n_m, BH, REVERSE: gl.constexpr):
        # tile t -> (query block, batch·head). REVERSE (causal): the query blocks with the most key blocks first,
        # heads on the fast axis; otherwise query blocks on the fast axis
        if REVERSE:
            return n_m - 1 - t // BH, t % BH
        else:
            return t % n_m, t // n_m

    @gluon.jit
    def _n_blocks(q_start, S, CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
        if CAUSAL:
            return (q_start + BLOCK_M + BLOCK_N - 1) // BLOCK_N
        else:
            return S // BLOCK_N

    @gluon.jit
    def _load_partition(
        desc_q, desc_k, desc_v, q_smem, k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty, v_empty,
        S, n_m, BH, n_tiles, CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
        STAGES: gl.constexpr, NUM_WG: gl.constexpr, REVERSE: gl.constexpr,
    ):  # fmt: skip
        # q: one box of rows per computing warpgroup (a TMA box is a power of two rows; 3 × 64 is not)
        rows: gl.constexpr = desc_q.block_type.shape[0]
        c = 0  # K/V blocks loaded by this program, over all its tiles: the ring's slot and phase
        it = 0  # tiles of this program
        for t in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
            start_m, bh = _tile(t, n_m, BH, REVERSE)
            kv_row0 = bh * S
            q_start = start_m * BLOCK_M
            n_blocks = _n_blocks(q_start, S, CAUSAL, BLOCK_M, BLOCK_N)
            # a fresh barrier has finished "phase -1": the first pass over a ring does not wait
            mbarrier.wait(q_empty, (it & 1) ^ 1)
            mbarrier.expect(q_ready, NUM_WG * desc_q.block_type.nbytes)
            for w in gl.static_range(NUM_WG):
                _tma_load(desc_q, [kv_row0 + q_start + w * rows, 0], q_ready, q_smem.index(w))
            for j in range(n_blocks):
                slot = c % STAGES
                empty_phase = ((c // STAGES) & 1) ^ 1
                row = kv_row0 + j * BLOCK_N
                mbarrier.wait(k_empty.index(slot), empty_phase)
                mbarrier.expect(k_ready.index(slot), desc_k.block_type.nbytes)
                _tma_load(desc_k, [row, 0], k_ready.index(slot), k_smem.index(slot))
                mbarrier.wait(v_empty.index(slot), empty_phase)
                mbarrier.expect(v_ready.index(slot), desc_v.block_type.nbytes)
                _tma_load(desc_v, [row, 0], v_ready.index(slot), v_smem.index(slot))
                c += 1
            it += 1

    @gluon.jit
    def _masked(s, j, q_start, CAUSAL: gl.constexpr, ROWS: gl.constexpr, BLOCK_N: gl.constexpr):
        if CAUSAL:
            if (j + 1) * BLOCK_N > q_start:  # a block reaching the diagonal: keys after a query are not seen
                rows = q_start + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s.type.layout))
                cols = j * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s.type.layout))
                s = gl.where(rows[:, None] >= cols[None, :], s, float("-inf"))
        return s

    @gluon.jit
    def _my_turn(turn, k, WG: gl.constexpr, PINGPONG: gl.constexpr):
        # ping-pong: the computing warpgroups issue their k-th group of products in turn (0, 1[, 2], 0, ...), so
        # one warpgroup's softmax runs while another's products use the tensor cores. Warpgroup 0's k-th wait
        # needs the last one's (k-1)-th arrival (none for k = 0: a fresh barrier has finished "phase -1"), the
        # others' their predecessor's k-th
        if PINGPONG:
            mbarrier.wait(turn.index(WG), (k & 1) ^ (WG == 0))

    @gluon.jit
    def _their_turn(turn, WG: gl.constexpr, NUM_WG: gl.constexpr, PINGPONG: gl.constexpr):
        if PINGPONG:
            mbarrier.arrive(turn.index((WG + 1) % NUM_WG))

    @gluon.jit
    def _compute_partition(
        q_smem, k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty, v_empty, turn, o_ptr, lse_ptr,
        qk_scale, S, H, n_m, BH, n_tiles, so_b, so_h, so_s, CAUSAL: gl.constexpr, HEAD_D: gl.constexpr,
        BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, PIPE: gl.constexpr,
        PINGPONG: gl.constexpr, REVERSE: gl.constexpr, WG: gl.constexpr, NUM_WG: gl.constexpr,
    ):  # fmt: skip
        # one warpgroup (4 warps) and its ROWS query rows of each tile: q_smem is its box of the tile's q
        ROWS: gl.constexpr = BLOCK_M // NUM_WG
        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16]
        )
        o_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_D, 16]
        )
        p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
        s_rows: gl.constexpr = gl.SliceLayout(1, s_layout)
        o_rows: gl.constexpr = gl.SliceLayout(1, o_layout)
        dtype: gl.constexpr = q_smem.dtype
        zero_s = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)

        c = 0  # K/V blocks consumed over this program's tiles (the loader counts the same way)
        k = 0  # groups of products issued (the ping-pong's turns)
        it = 0
        for t in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
            start_m, bh = _tile(t, n_m, BH, REVERSE)
            q_start = start_m * BLOCK_M + WG * ROWS
            n_blocks = _n_blocks(start_m * BLOCK_M, S, CAUSAL, BLOCK_M, BLOCK_N)
            acc = gl.zeros([ROWS, HEAD_D], gl.float32, o_layout)
            mbarrier.wait(q_ready, it & 1)

            # block 0's scores and softmax (the running maximum starts there)
            slot = c % STAGES
            mbarrier.wait(k_ready.index(slot), (c // STAGES) & 1)
            _my_turn(turn, k, WG, PINGPONG)
            s_tok = warpgroup_mma(
                q_smem, k_smem.index(slot).permute((1, 0)), zero_s, use_acc=False, is_async=True
            )
            _their_turn(turn, WG, NUM_WG, PINGPONG)
            s = warpgroup_mma_wait(0, deps=(s_tok,))
            _release(k_empty.index(slot))
            s = _masked(s, 0, q_start, CAUSAL, ROWS, BLOCK_N)
            m_i = gl.max(s, axis=1) * qk_scale
            p = gl.exp2(s * qk_scale - m_i[:, None])
            l_i = gl.sum(p, axis=1)
            for j in range(1, n_blocks):
                prev = (c + j - 1) % STAGES
                prev_phase = ((c + j - 1) // STAGES) & 1
                slot = (c + j) % STAGES
                mbarrier.wait(k_ready.index(slot), ((c + j) // STAGES) & 1)
                _my_turn(turn, k + j, WG, PINGPONG)
                if PIPE:  # issue S_j, then P_{j-1}·V_{j-1}; the softmax of S_j runs under the second product
                    s_tok = warpgroup_mma(q_smem, k_smem.index(slot).permute((1, 0)), zero_s, use_acc=False,
                                          is_async=True)  # fmt: skip
                    mbarrier.wait(v_ready.index(prev), prev_phase)
                    p_op = gl.convert_layout(p.to(dtype), p_layout)
                    acc_tok = warpgroup_mma(p_op, v_smem.index(prev), acc, is_async=True)
                    _their_turn(turn, WG, NUM_WG, PINGPONG)
                    s = warpgroup_mma_wait(1, deps=(s_tok,))
                    _release(k_empty.index(slot))
                else:
                    mbarrier.wait(v_ready.index(prev), prev_phase)
                    p_op = gl.convert_layout(p.to(dtype), p_layout)
                    acc = warpgroup_mma(p_op, v_smem.index(prev), acc)
                    _release(v_empty.index(prev))
                    s = warpgroup_mma(q_smem, k_smem.index(slot).permute((1, 0)), zero_s, use_acc=False)
                    _their_turn(turn, WG, NUM_WG, PINGPONG)
                    _release(k_empty.index(slot))
                s = _masked(s, j, q_start, CAUSAL, ROWS, BLOCK_N)
                m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
                alpha = gl.exp2(m_i - m_new)
                p = gl.exp2(s * qk_scale - m_new[:, None])
                l_i = l_i * alpha + gl.sum(p, axis=1)
                m_i = m_new
                if PIPE:
                    acc = warpgroup_mma_wait(0, deps=(acc_tok,))
                    _release(v_empty.index(prev))
                acc = acc * gl.convert_layout(alpha, o_rows)[:, None]
            _release(q_empty)  # every score product of this tile is done: the loader may bring the next q
            last = (c + n_blocks - 1) % STAGES
            mbarrier.wait(v_ready.index(last), ((c + n_blocks - 1) // STAGES) & 1)
            p_op = gl.convert_layout(p.to(dtype), p_layout)
            _my_turn(turn, k + n_blocks, WG, PINGPONG)
            acc = warpgroup_mma(p_op, v_smem.index(last), acc)
            _their_turn(turn, WG, NUM_WG, PINGPONG)
            _release(v_empty.index(last))

            o = acc / gl.convert_layout(l_i, o_rows)[:, None]
            offs_m = gl.arange(0, ROWS, layout=o_rows)
            offs_d = gl.arange(0, HEAD_D, layout=gl.SliceLayout(0, o_layout))
            o_base = o_ptr + (bh // H).to(gl.int64) * so_b + (bh % H).to(gl.int64) * so_h
            rows_ok = (
                q_start + offs_m
            ) < S  # a tile may reach past S (192-row tiles): those rows are not stored
            gl.store(o_base + (q_start + offs_m)[:, None] * so_s + offs_d[None, :], o.to(dtype),
                     mask=rows_ok[:, None])  # fmt: skip
            lse_offs = gl.arange(0, ROWS, layout=s_rows)
            # m_i and log2(l_i) are in base 2; the lse is stored in natural log (× ln 2)
            gl.store(lse_ptr + bh.to(gl.int64) * S + q_start + lse_offs, (m_i + gl.log2(l_i)) * 0.6931471805599453,
                     mask=(q_start + lse_offs) < S)  # fmt: skip
            c += n_blocks
            k += n_blocks + 1
            it += 1

    @gluon.jit
    def _attn_fwd_ws_kernel(
        desc_q, desc_k, desc_v, o_ptr, lse_ptr, H, S, qk_scale, so_b, so_h, so_s, n_m, BH, n_tiles,
        CAUSAL: gl.constexpr, HEAD_D: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
        STAGES: gl.constexpr, PIPE: gl.constexpr, PINGPONG: gl.constexpr, REVERSE: gl.constexpr,
        LOAD_REGS: gl.constexpr, COMPUTE_REGS: gl.constexpr, NUM_WG: gl.constexpr,
    ):  # fmt: skip
        # Tiles of BLOCK_M query rows of one batch·head; a program takes tiles pid, pid + grid, ... (one each when
        # the grid has a program per tile, several when it has one per SM: PERSISTENT). NUM_WG (2 or 3)
        # warpgroups of BLOCK_M // NUM_WG rows each, one in the default partition (the kernel's 4 warps) and the
        # others in workers, share every K and V block the loader warp brings.
        q_smem = gl.allocate_shared_memory(desc_q.dtype, [NUM_WG] + desc_q.block_type.shape, desc_q.layout)
        k_smem = gl.allocate_shared_memory(desc_k.dtype, [STAGES] + desc_k.block_type.shape, desc_k.layout)
        v_smem = gl.allocate_shared_memory(desc_v.dtype, [STAGES] + desc_v.block_type.shape, desc_v.layout)
        q_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        q_empty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        turn = gl.allocate_shared_memory(gl.int64, [NUM_WG, 1], mbarrier.MBarrierLayout())
        mbarrier.init(q_ready, count=1)
        mbarrier.init(q_empty, count=NUM_WG)  # every computing warpgroup hands q back
        for i in gl.static_range(NUM_WG):
            mbarrier.init(turn.index(i), count=1)
        for i in gl.static_range(STAGES):
            mbarrier.init(k_ready.index(i), count=1)
            mbarrier.init(v_ready.index(i), count=1)
            mbarrier.init(k_empty.index(i), count=NUM_WG)  # every computing warpgroup hands a slot back
            mbarrier.init(v_empty.index(i), count=NUM_WG)

        # fmt: off
        # (the partition list is written out per NUM_WG: the JIT does not keep a function in a variable)
        if NUM_WG == 2:
            gl.warp_specialize(
                [
                    (_compute_partition,
                     (q_smem.index(0), k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty, v_empty, turn,
                      o_ptr, lse_ptr, qk_scale, S, H, n_m, BH, n_tiles, so_b, so_h, so_s, CAUSAL, HEAD_D, BLOCK_M,
                      BLOCK_N, STAGES, PIPE, PINGPONG, REVERSE, 0, NUM_WG)),
                    (_compute_partition,
                     (q_smem.index(1), k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty, v_empty, turn,
                      o_ptr, lse_ptr, qk_scale, S, H, n_m, BH, n_tiles, so_b, so_h, so_s, CAUSAL, HEAD_D, BLOCK_M,
                      BLOCK_N, STAGES, PIPE, PINGPONG, REVERSE, 1, NUM_WG)),
                    (_load_partition,
                     (desc_q, desc_k, desc_v, q_smem, k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty,
                      v_empty, S, n_m, BH, n_tiles, CAUSAL, BLOCK_M, BLOCK_N, STAGES, NUM_WG, REVERSE)),
                ],
                [4, 1],
                [COMPUTE_REGS, LOAD_REGS],
            )
        else:
            gl.static_assert(NUM_WG == 3, "two or three computing warpgroups")
            gl.warp_specialize(
                [
                    (_compute_partition,
                     (q_smem.index(0), k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty, v_empty, turn,
                      o_ptr, lse_ptr, qk_scale, S, H, n_m, BH, n_tiles, so_b, so_h, so_s, CAUSAL, HEAD_D, BLOCK_M,
                      BLOCK_N, STAGES, PIPE, PINGPONG, REVERSE, 0, NUM_WG)),
                    (_compute_partition,
                     (q_smem.index(1), k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty, v_empty, turn,
                      o_ptr, lse_ptr, qk_scale, S, H, n_m, BH, n_tiles, so_b, so_h, so_s, CAUSAL, HEAD_D, BLOCK_M,
                      BLOCK_N, STAGES, PIPE, PINGPONG, REVERSE, 1, NUM_WG)),
                    (_compute_partition,
                     (q_smem.index(2), k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty, v_empty, turn,
                      o_ptr, lse_ptr, qk_scale, S, H, n_m, BH, n_tiles, so_b, so_h, so_s, CAUSAL, HEAD_D, BLOCK_M,
                      BLOCK_N, STAGES, PIPE, PINGPONG, REVERSE, 2, NUM_WG)),
                    (_load_partition,
                     (desc_q, desc_k, desc_v, q_smem, k_smem, v_smem, q_ready, q_empty, k_ready, v_ready, k_empty,
                      v_empty, S, n_m, BH, n_tiles, CAUSAL, BLOCK_M, BLOCK_N, STAGES, NUM_WG, REVERSE)),
                ],
                [4, 4, 1],
                [COMPUTE_REGS, COMPUTE_REGS, LOAD_REGS],
            )
        # fmt: on


def usable(q, k, v, scale: float, cfg: dict | None = None) -> bool:  # noqa: ANN001
    """Whether the Gluon kernel takes this call: Gluon present, a CUDA GPU of compute capability 9.x, one
    contiguous 16-byte-aligned (B, H, S, D) bf16/fp16 layout, a head dim it has a launch for, S at least one
    query tile and a multiple of its key block (a query tile may reach past S: its extra rows are not stored),
    and a positive scale (the softmax takes the row maximum before scaling)."""
    import torch

    if gluon is None or scale <= 0 or not q.is_cuda or q.dtype not in (torch.bfloat16, torch.float16):
        return False
    if torch.cuda.get_device_capability(q.device)[0] != 9:
        return False
    cfg = cfg or CONFIGS.get(q.shape[-1])
    if cfg is None or q.shape[2] % int(cfg["BLOCK_N"]) or q.shape[2] < int(cfg["BLOCK_M"]):
        return False
    return all(t.shape == q.shape and t.dtype == q.dtype and t.is_contiguous() and t.data_ptr() % 16 == 0
               for t in (q, k, v))  # fmt: skip


def launch(q, k, v, o, lse, causal: bool, qk_scale: float, cfg: dict | None = None) -> None:  # noqa: ANN001
    """Run the Gluon forward on q, k, v (:func:`usable` said yes) into o, lse; ``qk_scale`` includes log2(e)."""
    B, H, S, D = q.shape
    cfg = cfg or CONFIGS[D]
    bm, bn = int(cfg["BLOCK_M"]), int(cfg["BLOCK_N"])
    rows = B * H * S
    el = gl.bfloat16 if str(q.dtype) == "torch.bfloat16" else gl.float16  # usable() allowed only these two
    num_wg = int(cfg.get("NUM_WG", 2))
    rows_wg = bm // num_wg  # each computing warpgroup's query rows: one q box
    q_layout = gl.NVMMASharedLayout.get_default_for([rows_wg, D], el)
    kv_layout = gl.NVMMASharedLayout.get_default_for([bn, D], el)
    desc_q = GluonDescriptor(q, [rows, D], [D, 1], [rows_wg, D], q_layout)
    desc_k = GluonDescriptor(k, [rows, D], [D, 1], [bn, D], kv_layout)
    desc_v = GluonDescriptor(v, [rows, D], [D, 1], [bn, D], kv_layout)
    n_m = triton.cdiv(S, bm)
    n_tiles = n_m * B * H
    grid = (min(n_tiles, num_sms(q.device.index or 0)) if cfg.get("PERSISTENT") else n_tiles,)
    _attn_fwd_ws_kernel[grid](
        desc_q, desc_k, desc_v, o, lse, H, S, qk_scale, o.stride(0), o.stride(1), o.stride(2), n_m, B * H, n_tiles,
        CAUSAL=causal, HEAD_D=D, BLOCK_M=bm, BLOCK_N=bn, STAGES=int(cfg["STAGES"]), PIPE=bool(cfg["PIPE"]),
        PINGPONG=bool(cfg.get("PINGPONG", False)), REVERSE=bool(cfg.get("REVERSE", False)) and causal,
        LOAD_REGS=int(cfg["LOAD_REGS"]), COMPUTE_REGS=int(cfg["COMPUTE_REGS"]), NUM_WG=num_wg,
        num_warps=4,
    )  # fmt: skip
