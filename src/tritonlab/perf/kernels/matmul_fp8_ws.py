"""Block-scaled fp8 GEMM for Hopper in Gluon: a loader warp and two computing warpgroups (issue 39).

Same contract as :func:`matmul_fp8.matmul_fp8` (``C = (A ⊙ sa) @ (W ⊙ sw)ᵀ``, e4m3 A and W with K contiguous,
1×128 scales for A and 128×128 for W, bf16 C). Why a second form: Triton's compiler runs the Triton kernel
with one role for every warp, and every warp waits for its K block's product before it scales and adds it
(the "promotion", ``matmul_fp8``'s docstring); cuBLAS's `_scaled_mm` kernels are warp-specialised, one
producer and two consumer warpgroups (``perf/targets.toml``). Gluon lets a kernel say that:

* :func:`_load_partition` runs in one extra warp: for each output tile it copies, for every 128-deep K block,
  the A rows of each computing warpgroup (one 64×128 box each) and the tile's 128×128 W block through the TMA
  unit into a ring of ``STAGES`` shared-memory slots, each slot guarded by a "ready" barrier (the bytes
  arrived) and an "empty" barrier (both warpgroups are done with it);
* :func:`_compute_partition` runs once per computing warpgroup on its 64 rows of the 128-row tile: each K
  block's product goes into a fresh fp32 tile (``warpgroup_mma``), which is folded into the accumulator with
  one fused multiply-add per element, ``acc = part · (sa · sw) + acc`` (the tile is 128 columns wide, inside
  one weight block: one weight scale per K block). With ``PIPE`` the next block's product is issued before
  this block is folded in, so the fold runs under the tensor cores; the two warpgroups' products and folds also
  interleave. The tile is written through shared memory by a TMA store, which overlaps the next tile's loads.

Persistent: one program per SM takes tiles ``pid, pid + grid, ...`` in grouped order (``GROUP_M`` row tiles
share their W columns in L2). The TMA unit fills zeros past every edge (M, N and K tails) and the store clips
to C's bounds. :func:`usable` says whether a call qualifies (Gluon present, an sm_90 GPU, M above the decode
size); :mod:`matmul_fp8` runs this kernel when a call asks for it (``config={"GLUON": True}``), its Triton
kernel otherwise.

Status: compiled for sm_90 with Triton 3.6 and 3.9 it is what the description says (12 warps, 24 and 240
registers, fp8 wgmma, no spills, products not serialised by ptxas: tests/test_reference_lowering.py). On an
H100 its values were right on every edge shape and it ran at 0.865× the fastest `torch._scaled_mm` scaling
against 0.704× for the Triton kernel (``benchmarks/fp8_ws.py``, H100-80GB-HBM3 run 2026-12-07 (e5686c3)), so it
is ``matmul_fp8``'s default above 64 rows (``matmul_fp8.GLUON_DEFAULT``); tests/test_bench_gpu.py holds it to
float64 on a GPU.
"""

from __future__ import annotations

import triton

from ._common import num_sms
from ._gluon import (
    GluonDescriptor,
    fence_async_shared,
    gl,
    gluon,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from ._gluon import partition_sync as _partition_sync
from ._gluon import release as _release
from ._gluon import tma_load as _tma_load
from ._gluon import tma_store as _tma_store

SCALE_BLOCK = 128
ROWS_WG = 64  # query rows of one computing warpgroup: one wgmma row block

#: The launch: 128×128 tiles (two warpgroups of 64 rows), the K block of the scales, ring slots, grouped order,
#: the next product issued before the fold (``PIPE``), the loader's and the computing warpgroups' registers.
CONFIG: dict[str, int | bool] = {
    "BN": 128, "STAGES": 4, "GROUP_M": 8, "PIPE": True, "LOAD_REGS": 24, "COMPUTE_REGS": 240,
}  # fmt: skip


if gluon is not None:
    _ROWS = gl.constexpr(ROWS_WG)  # globals a kernel reads must be constexpr
    _SCALE_BLOCK = gl.constexpr(SCALE_BLOCK)

    @gluon.jit
    def _tile(t, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
        # tile t -> (row tile, column tile) in groups of GROUP_M row tiles (lesson 9's order)
        per_group = GROUP_M * num_pid_n
        first_m = (t // per_group) * GROUP_M
        size_m = gl.minimum(num_pid_m - first_m, GROUP_M)
        return first_m + (t % per_group) % size_m, (t % per_group) // size_m

    @gluon.jit
    def _load_partition(
        a_desc, w_desc, a_smem, w_smem, ready, empty, num_pid_m, num_pid_n, k_tiles, BN: gl.constexpr,
        STAGES: gl.constexpr, GROUP_M: gl.constexpr, NUM_WG: gl.constexpr,
    ):  # fmt: skip
        BK: gl.constexpr = a_desc.block_type.shape[1]
        c = 0  # K blocks loaded by this program over all its tiles: the ring's slot and phase
        for t in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
            pid_m, pid_n = _tile(t, num_pid_m, num_pid_n, GROUP_M)
            for ki in range(k_tiles):
                slot = c % STAGES
                # a fresh barrier has finished "phase -1": the first pass over the ring does not wait
                mbarrier.wait(empty.index(slot), ((c // STAGES) & 1) ^ 1)
                mbarrier.expect(
                    ready.index(slot), NUM_WG * a_desc.block_type.nbytes + w_desc.block_type.nbytes
                )
                for w in gl.static_range(NUM_WG):
                    _tma_load(a_desc, [pid_m * NUM_WG * _ROWS + w * _ROWS, ki * BK], ready.index(slot),
                              a_smem.index(slot * NUM_WG + w))  # fmt: skip
                _tma_load(w_desc, [pid_n * BN, ki * BK], ready.index(slot), w_smem.index(slot))
                c += 1

    @gluon.jit
    def _issue(a_smem, w_smem, ready, zero, c, STAGES: gl.constexpr, WG: gl.constexpr, NUM_WG: gl.constexpr):
        # the product of the c-th K block this program consumes, into a fresh fp32 tile, once its bytes are in
        slot = c % STAGES
        mbarrier.wait(ready.index(slot), (c // STAGES) & 1)
        return warpgroup_mma(a_smem.index(slot * NUM_WG + WG), w_smem.index(slot).permute((1, 0)), zero,
                             use_acc=False, is_async=True)  # fmt: skip

    @gluon.jit
    def _scale(sa_rows, sw_at, ki, stride_sak, stride_swk):
        # block ki's row scales times its weight scale, loaded while its product runs
        return gl.load(sa_rows + ki * stride_sak) * gl.load(sw_at + ki * stride_swk)

    @gluon.jit
    def _fold(acc, part, scale, empty, c, STAGES: gl.constexpr):
        # the c-th block's product is done with its slot; scaled, it joins the accumulator (one FMA an element)
        _release(empty.index(c % STAGES))
        return gl.fma(part, scale[:, None], acc)

    @gluon.jit
    def _compute_partition(
        a_smem, w_smem, c_smem, ready, empty, c_desc, sa_ptr, sw_ptr, M, num_pid_m, num_pid_n, k_tiles,
        stride_sam, stride_sak, stride_swn, stride_swk, BN: gl.constexpr, STAGES: gl.constexpr,
        GROUP_M: gl.constexpr, PIPE: gl.constexpr, WG: gl.constexpr, NUM_WG: gl.constexpr,
    ):  # fmt: skip
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 32]
        )
        rows_layout: gl.constexpr = gl.SliceLayout(1, acc_layout)
        zero = gl.zeros([_ROWS, BN], gl.float32, acc_layout)
        c = 0  # K blocks consumed (the loader counts the same way)
        for t in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
            pid_m, pid_n = _tile(t, num_pid_m, num_pid_n, GROUP_M)
            row0 = pid_m * NUM_WG * _ROWS + WG * _ROWS
            # rows past M read the last row's scales (they are not stored)
            rows = gl.minimum(row0 + gl.arange(0, _ROWS, layout=rows_layout), M - 1)
            sa_rows = sa_ptr + rows.to(gl.int64) * stride_sam
            sw_at = sw_ptr + (pid_n * BN // _SCALE_BLOCK).to(gl.int64) * stride_swn
            acc = gl.zeros([_ROWS, BN], gl.float32, acc_layout)
            if PIPE:  # two blocks' products in flight at once; the first is folded in under the second
                # (no product stays in flight across the loop's back edge: the copy of its registers there would
                # make ptxas serialise every product)
                for p in range(k_tiles // 2):
                    x = _issue(a_smem, w_smem, ready, zero, c, STAGES, WG, NUM_WG)
                    y = _issue(a_smem, w_smem, ready, zero, c + 1, STAGES, WG, NUM_WG)
                    sx = _scale(sa_rows, sw_at, 2 * p, stride_sak, stride_swk)
                    sy = _scale(sa_rows, sw_at, 2 * p + 1, stride_sak, stride_swk)
                    part, y = warpgroup_mma_wait(1, deps=(x, y))
                    acc = _fold(acc, part, sx, empty, c, STAGES)
                    part = warpgroup_mma_wait(0, deps=(y,))
                    acc = _fold(acc, part, sy, empty, c + 1, STAGES)
                    c += 2
                if k_tiles % 2:
                    part = _issue(a_smem, w_smem, ready, zero, c, STAGES, WG, NUM_WG)
                    sx = _scale(sa_rows, sw_at, k_tiles - 1, stride_sak, stride_swk)
                    part = warpgroup_mma_wait(0, deps=(part,))
                    acc = _fold(acc, part, sx, empty, c, STAGES)
                    c += 1
            else:  # each block's product, then its fold (the other warpgroup's product runs under it)
                for ki in range(k_tiles):
                    part = _issue(a_smem, w_smem, ready, zero, c, STAGES, WG, NUM_WG)
                    sx = _scale(sa_rows, sw_at, ki, stride_sak, stride_swk)
                    part = warpgroup_mma_wait(0, deps=(part,))
                    acc = _fold(acc, part, sx, empty, c, STAGES)
                    c += 1
            # this warpgroup's previous tile has left c_smem: the thread that issued its store waits, the others
            # wait for that thread, before any of them writes c_smem
            tma.store_wait(0)
            _partition_sync()
            c_smem.store(acc.to(c_desc.dtype))
            fence_async_shared()
            _partition_sync()
            _tma_store(c_desc, [row0, pid_n * BN], c_smem)
        tma.store_wait(0)

    @gluon.jit
    def _fp8_ws_kernel(
        a_desc, w_desc, c_desc, sa_ptr, sw_ptr, M, N, K, stride_sam, stride_sak, stride_swn, stride_swk,
        BN: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr, PIPE: gl.constexpr,
        LOAD_REGS: gl.constexpr, COMPUTE_REGS: gl.constexpr,
    ):  # fmt: skip
        NUM_WG: gl.constexpr = 2
        BK: gl.constexpr = a_desc.block_type.shape[1]
        num_pid_m = gl.cdiv(M, NUM_WG * _ROWS)
        num_pid_n = gl.cdiv(N, BN)
        k_tiles = gl.cdiv(K, BK)
        a_smem = gl.allocate_shared_memory(
            a_desc.dtype, [STAGES * NUM_WG] + a_desc.block_type.shape, a_desc.layout
        )
        w_smem = gl.allocate_shared_memory(w_desc.dtype, [STAGES] + w_desc.block_type.shape, w_desc.layout)
        c_smem = gl.allocate_shared_memory(c_desc.dtype, [NUM_WG] + c_desc.block_type.shape, c_desc.layout)
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(empty.index(i), count=NUM_WG)  # both computing warpgroups hand a slot back
        # fmt: off
        gl.warp_specialize(
            [
                (_compute_partition,
                 (a_smem, w_smem, c_smem.index(0), ready, empty, c_desc, sa_ptr, sw_ptr, M, num_pid_m, num_pid_n,
                  k_tiles, stride_sam, stride_sak, stride_swn, stride_swk, BN, STAGES, GROUP_M, PIPE, 0, NUM_WG)),
                (_compute_partition,
                 (a_smem, w_smem, c_smem.index(1), ready, empty, c_desc, sa_ptr, sw_ptr, M, num_pid_m, num_pid_n,
                  k_tiles, stride_sam, stride_sak, stride_swn, stride_swk, BN, STAGES, GROUP_M, PIPE, 1, NUM_WG)),
                (_load_partition,
                 (a_desc, w_desc, a_smem, w_smem, ready, empty, num_pid_m, num_pid_n, k_tiles, BN, STAGES, GROUP_M,
                  NUM_WG)),
            ],
            [4, 1],
            [COMPUTE_REGS, LOAD_REGS],
        )
        # fmt: on


def usable(a, w, out=None) -> bool:  # noqa: ANN001
    """Whether the Gluon kernel takes this call: Gluon present, a CUDA GPU of compute capability 9.x, more rows
    than the decode tile's 64 (a 16-row product wastes most of a 64-row warpgroup's product), and operands whose
    rows are 16-byte aligned (what the TMA unit needs; ``matmul_fp8`` checks a and w before this; ``out`` None:
    a fresh contiguous M×N bf16 tensor)."""
    import torch

    if gluon is None or not a.is_cuda or a.shape[0] <= 64:
        return False
    if torch.cuda.get_device_capability(a.device)[0] != 9:
        return False
    if out is None:
        return (w.shape[0] * 2) % 16 == 0
    return out.is_contiguous() and out.data_ptr() % 16 == 0 and (out.shape[1] * 2) % 16 == 0


def launch(a, a_scale, w, w_scale, out, cfg: dict | None = None) -> None:  # noqa: ANN001
    """Run the Gluon kernel (:func:`usable` said yes) on fp8 ``a`` (M×K), ``w`` (N×K) into bf16 ``out``."""
    cfg = {**CONFIG, **(cfg or {})}
    M, K = a.shape
    N = w.shape[0]
    bn = int(cfg["BN"])
    if SCALE_BLOCK % bn:
        raise ValueError(f"BN ({bn}) must divide {SCALE_BLOCK}: a tile takes one weight scale per K block")
    f8 = gl.float8e4nv
    a_layout = gl.NVMMASharedLayout.get_default_for([ROWS_WG, SCALE_BLOCK], f8)
    w_layout = gl.NVMMASharedLayout.get_default_for([bn, SCALE_BLOCK], f8)
    c_layout = gl.NVMMASharedLayout.get_default_for([ROWS_WG, bn], gl.bfloat16)
    a_desc = GluonDescriptor(a, [M, K], [a.stride(0), 1], [ROWS_WG, SCALE_BLOCK], a_layout)
    w_desc = GluonDescriptor(w, [N, K], [w.stride(0), 1], [bn, SCALE_BLOCK], w_layout)
    c_desc = GluonDescriptor(out, [M, N], [out.stride(0), 1], [ROWS_WG, bn], c_layout)
    tiles = triton.cdiv(M, 2 * ROWS_WG) * triton.cdiv(N, bn)
    grid = (min(tiles, num_sms(a.device.index or 0)),)
    _fp8_ws_kernel[grid](
        a_desc, w_desc, c_desc, a_scale, w_scale, M, N, K, *a_scale.stride(), *w_scale.stride(), BN=bn,
        STAGES=int(cfg["STAGES"]), GROUP_M=int(cfg["GROUP_M"]), PIPE=bool(cfg["PIPE"]),
        LOAD_REGS=int(cfg["LOAD_REGS"]), COMPUTE_REGS=int(cfg["COMPUTE_REGS"]), num_warps=4,
    )  # fmt: skip
