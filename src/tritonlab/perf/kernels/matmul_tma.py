"""Persistent GEMM with TMA tensor descriptors: ``C = A @ B`` for bf16/fp16, fp32 accumulation (issue 39).

Cost model as ``matmul``: 2·M·N·K FLOPs, (M·K + K·N + M·N)·s bytes at least.

Design (the Hopper recipe lesson 14 teaches, written as one kernel):

* **persistent**: the grid is the number of SMs (or the number of tiles, if fewer); each program walks the
  output tiles ``pid, pid + NUM_SMS, ...``, so the launch cost and the prologue are paid once per SM, and the
  next tile's first loads can overlap this tile's last products (``FLATTEN``: one software-pipelined loop over
  tiles × K steps);
* **grouped tile order**: consecutive tile ids walk GROUP_M rows of tiles column by column, so the A rows and B
  columns the SMs are reading at one moment stay in L2;
* **tensor descriptors**, made in the kernel (``tl.make_tensor_descriptor``: base, shape and strides are kernel
  arguments, the descriptor lives in a small global scratch buffer, ``triton.set_allocator``) or on the host
  and passed in (``host_desc``, what the shipped configurations do: see below); each
  ``desc.load`` is one TMA copy of a BM×BK or BK×BN box into the swizzled shared-memory layout ``wgmma``
  reads, with zero fill past the matrix's edge — no masks, any M, N, K (rows 16-byte aligned);
* **split epilogue** (``EPI_SPLIT`` = 2): the accumulator is stored as two BM×BN/2 halves, which halves the
  shared-memory staging the TMA store needs;
* ``WARP_SPEC``: ``tl.range(..., warp_specialize=True)`` on the tile loop (producer warps issue the TMA copies).

The decode shape (M = 16) takes BM = 16 (``mma.sync`` instead of ``wgmma``: 64-row warpgroup products would
waste three quarters of their work). It is memory-bound (reading B is all the work), so what counts is that
every SM streams B in wide TMA boxes; with one program per output tile, N / BN programs do that, and a narrow BN
(more programs) makes short TMA rows. Hence the **split-K decode path** (``SPLIT_K`` > 1 in the config,
``_splitk_tma_kernel``):

* work items are (output tile, K split) pairs, ``tiles × SPLIT_K`` of them, at most one per SM in the shipped
  configuration; the grid is ``min(SMs, items)`` and each program walks ``pid, pid + NUM_SMS, ...`` as above.
  Split ``s`` covers K tiles ``[s·⌈k_tiles/SPLIT_K⌉, (s+1)·⌈k_tiles/SPLIT_K⌉)`` clipped to K: the last splits may
  be short or empty (an empty split contributes a zero partial);
* each item computes its BM×BN fp32 partial with TMA descriptor loads (BN ≥ 128: TMA rows of ≥ 256 bytes) and
  stores it into a workspace ``[SPLIT_K, M_pad, N]`` (``M_pad`` = M rounded up to BM), plain ``st.global``;
* **deterministic reduction in the same launch**: a CTA barrier (``tl.debug_barrier``: every thread's partial
  stores happen before it), then one ``atomic_add(counter[tile], 1, sem="acq_rel")`` at GPU scope (one thread
  issues it; Triton broadcasts the old value through shared memory behind another barrier): its release half
  publishes the CTA's partial, its acquire half makes every earlier arriver's partial visible to the program
  that reads the old value ``SPLIT_K - 1``, which is the last arriver (the same barrier-then-release,
  acquire-then-barrier pattern as CUTLASS's split-K semaphore). Only that one sums the SPLIT_K partials, always in
  split order 0, 1, ..., SPLIT_K - 1 (so the result does not depend on which program came last: bitwise
  reproducible), writes C and stores 0 into the counter, so the next launch needs no memset (no other program
  of this launch touches that counter any more). The partials are read with ``.cg`` loads (L2, not a possibly
  stale L1 line). Nobody waits on anybody: no spin loop, no deadlock, whatever the number of resident programs;
* workspace and counters are cached per (device, stream) and only grow (counters are zeroed once, when
  allocated); launches on one stream are ordered, so they may share them; two streams get their own.

:data:`CONFIGS` pass descriptors built on the host (``host_desc``: ``TensorDescriptor.from_tensor``, the same
boxes as kernel arguments) to the same loops: in H200 run 2026-12-04 (f45fcbb) every decode candidate with
descriptors made in the kernel ran 21.8-24.5 TFLOP/s, split-K or not, where the host-descriptor ``matmul`` ran
29.7 — making descriptors costs a few microseconds a launch. With host descriptors (H200 run 2026-12-04
(b9d9d3e)): large 128×256×64, 8 warps, 3 stages, split epilogue, warp-specialised (the best candidate of H200
run 2026-12-04 (58448a1)); decode 16×128×128, 4 warps, 4 stages, SPLIT_K = 4 (the best in-kernel-descriptor
decode candidate of the f45fcbb sweep; host-built, the decode candidates ran 25.3-27.0 TFLOP/s, within 3 % of
each other). ``bench matmul_tma --reference``: 1.01× and 0.999× the fastest peer in two runs (the targets'
causes). The device-built kernels stay (``host_desc`` False): they are what lesson 14 teaches, and the
interpreter path uses them.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from ._common import TensorDescriptor, interpreting, num_sms

Config = dict[str, int | bool]

#: Per shape class ("decode": M ≤ 64, else "large"), descriptors built on the host; see the module docstring for
#: the runs that chose them. ``SPLIT_K`` absent or 1: one pass; ``host_desc`` absent: built in the kernel.
CONFIGS: dict[str, Config] = {
    "large": {"BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3, "EPI_SPLIT": 2,
              "flatten": True, "warp_spec": True, "host_desc": True},
    "decode": {"BM": 16, "BN": 128, "BK": 128, "GROUP_M": 1, "num_warps": 4, "num_stages": 4, "EPI_SPLIT": 1,
               "flatten": False, "warp_spec": False, "SPLIT_K": 4, "host_desc": True},
}  # fmt: skip
INTERPRETER_CONFIG: Config = {
    "BM": 32, "BN": 32, "BK": 32, "GROUP_M": 2, "num_warps": 4, "num_stages": 1, "EPI_SPLIT": 2, "flatten": False,
    "warp_spec": False,
}  # fmt: skip


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    per_group = GROUP_M * num_pid_n
    first_m = (tile_id // per_group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    return first_m + (tile_id % per_group) % size_m, (tile_id % per_group) // size_m


@triton.jit
def _one_tile(a_desc, b_desc, c_desc, tile_id, num_pid_m, num_pid_n, k_tiles, BM: tl.constexpr,
              BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, EPI_SPLIT: tl.constexpr,
              UPCAST: tl.constexpr):  # fmt: skip
    pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
    off_m = pid_m * BM
    off_n = pid_n * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in range(k_tiles):
        a = a_desc.load([off_m, ki * BK])
        b = b_desc.load([ki * BK, off_n])
        if UPCAST:  # the interpreter's low-precision dot is wrong; the GPU path never takes this branch
            a, b = a.to(tl.float32), b.to(tl.float32)
        acc = tl.dot(a, b, acc)
    if EPI_SPLIT == 2:
        left, right = acc.reshape(BM, 2, BN // 2).permute(0, 2, 1).split()
        c_desc.store([off_m, off_n], left.to(c_desc.dtype))
        c_desc.store([off_m, off_n + BN // 2], right.to(c_desc.dtype))
    else:
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@triton.jit
def _tile_loop(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, EPI_SPLIT: tl.constexpr, FLATTEN: tl.constexpr,
               WARP_SPEC: tl.constexpr, UPCAST: tl.constexpr):  # fmt: skip
    """The persistent tile loop, whichever side built the descriptors."""
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    num_tiles = num_pid_m * num_pid_n
    if WARP_SPEC:  # the keyword only where asked for: a Triton without it still compiles the plain loop
        for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=FLATTEN, warp_specialize=True):
            _one_tile(a_desc, b_desc, c_desc, tile_id, num_pid_m, num_pid_n, k_tiles, BM, BN, BK, GROUP_M,
                      EPI_SPLIT, UPCAST)  # fmt: skip
    else:
        for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=FLATTEN):
            _one_tile(a_desc, b_desc, c_desc, tile_id, num_pid_m, num_pid_n, k_tiles, BM, BN, BK, GROUP_M,
                      EPI_SPLIT, UPCAST)  # fmt: skip


@triton.jit
def _persistent_tma_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BM: tl.constexpr,
                           BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                           EPI_SPLIT: tl.constexpr, FLATTEN: tl.constexpr, WARP_SPEC: tl.constexpr,
                           UPCAST: tl.constexpr):  # fmt: skip
    """Descriptors built on the device (what lesson 14 teaches): the launch takes tensors and integers."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(
        c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BM, BN // EPI_SPLIT]
    )
    _tile_loop(a_desc, b_desc, c_desc, M, N, K, BM, BN, BK, GROUP_M, NUM_SMS, EPI_SPLIT, FLATTEN, WARP_SPEC,
               UPCAST)  # fmt: skip


@triton.jit
def _persistent_tma_host_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                                BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                                EPI_SPLIT: tl.constexpr, FLATTEN: tl.constexpr, WARP_SPEC: tl.constexpr,
                                UPCAST: tl.constexpr):  # fmt: skip
    """Descriptors built on the host (``TensorDescriptor``) and passed in: no descriptor made per launch."""
    _tile_loop(a_desc, b_desc, c_desc, M, N, K, BM, BN, BK, GROUP_M, NUM_SMS, EPI_SPLIT, FLATTEN, WARP_SPEC,
               UPCAST)  # fmt: skip


@triton.jit
def _splitk_tma_kernel(a_ptr, b_ptr, c_ptr, ws_ptr, cnt_ptr, M, N, K, stride_am, stride_bk, stride_cm, M_PAD,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr,
                       NUM_SMS: tl.constexpr, UPCAST: tl.constexpr):  # fmt: skip
    """Split-K with descriptors built on the device (see ``_splitk_items``)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BK, BN])
    _splitk_items(a_desc, b_desc, c_ptr, ws_ptr, cnt_ptr, M, N, K, stride_cm, M_PAD, BM, BN, BK, SPLIT_K,
                  NUM_SMS, UPCAST)  # fmt: skip


@triton.jit
def _splitk_tma_host_kernel(a_desc, b_desc, c_ptr, ws_ptr, cnt_ptr, M, N, K, stride_cm, M_PAD, BM: tl.constexpr,
                            BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr, NUM_SMS: tl.constexpr,
                            UPCAST: tl.constexpr):  # fmt: skip
    """Split-K with descriptors built on the host and passed in."""
    _splitk_items(a_desc, b_desc, c_ptr, ws_ptr, cnt_ptr, M, N, K, stride_cm, M_PAD, BM, BN, BK, SPLIT_K,
                  NUM_SMS, UPCAST)  # fmt: skip


@triton.jit
def _splitk_items(a_desc, b_desc, c_ptr, ws_ptr, cnt_ptr, M, N, K, stride_cm, M_PAD, BM: tl.constexpr,
                  BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr, NUM_SMS: tl.constexpr,
                  UPCAST: tl.constexpr):  # fmt: skip
    """Split-K for small M: item = (m tile, split, n tile), m fastest (the m tiles of one B box run side by
    side and share it through L2); each item stores its fp32 partial, the last of a tile's SPLIT_K items sums
    them in split order and writes C (see the module docstring for the memory ordering)."""
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    k_per_split = tl.cdiv(k_tiles, SPLIT_K)
    items = num_pid_m * num_pid_n * SPLIT_K
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    for item in tl.range(tl.program_id(0), items, NUM_SMS):
        pid_m = item % num_pid_m
        split = (item // num_pid_m) % SPLIT_K
        pid_n = item // (num_pid_m * SPLIT_K)
        off_m = pid_m * BM
        off_n = pid_n * BN
        k_lo = split * k_per_split
        k_hi = min(k_lo + k_per_split, k_tiles)  # k_lo may be ≥ k_hi: an empty split, a zero partial
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(k_lo, k_hi):
            a = a_desc.load([off_m, ki * BK])
            b = b_desc.load([ki * BK, off_n])
            if UPCAST:  # the interpreter's low-precision dot is wrong; the GPU path never takes this branch
                a, b = a.to(tl.float32), b.to(tl.float32)
            acc = tl.dot(a, b, acc)
        # workspace [SPLIT_K, M_PAD, N]: the tile's rows are < M_PAD by construction, only the columns are masked
        r = off_m + rows
        c = off_n + cols
        col_ok = (c < N)[None, :]
        tile_off = r[:, None] * N + c[None, :]
        tl.store(ws_ptr + split * M_PAD * N + tile_off, acc, mask=col_ok)
        # every thread's partial stores before the (single-thread) release below: CTA barrier, then acq_rel
        tl.debug_barrier()
        tile = pid_n * num_pid_m + pid_m
        arrived = tl.atomic_add(cnt_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:  # the last of the tile's items: every partial is published
            total = tl.zeros((BM, BN), dtype=tl.float32)
            for s in tl.static_range(SPLIT_K):  # fixed order: bitwise the same result whoever came last
                part_ptr = ws_ptr + s * M_PAD * N + tile_off
                total += tl.load(part_ptr, mask=col_ok, other=0.0, cache_modifier=".cg")  # L2, never stale L1
            tl.store(c_ptr + r[:, None] * stride_cm + c[None, :], total.to(c_ptr.dtype.element_ty),
                     mask=(r < M)[:, None] & col_ok)  # fmt: skip
            tl.store(cnt_ptr + tile, 0)  # ready for the next launch; nobody else touches it in this one


@functools.cache
def use_torch_allocator() -> None:
    """Give Triton a torch-backed allocator for the descriptors' global scratch (once per process)."""

    def alloc(size: int, alignment: int, stream: int | None) -> torch.Tensor:
        return torch.empty(size, device="cuda", dtype=torch.int8)

    triton.set_allocator(alloc)


#: (device, stream) -> (fp32 workspace, int32 per-tile counters, all zero between launches) of the split-K path
_WORKSPACES: dict[tuple[str, int], tuple[torch.Tensor, torch.Tensor]] = {}


def _workspace(device: torch.device, numel: int, tiles: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The split-K partials buffer (≥ ``numel`` fp32) and tile counters (≥ ``tiles`` int32, zero at rest) of
    this device and stream, allocated once and grown when a call needs more. Launches on one stream run in order
    and leave every counter at 0, so they share them; another stream (which could run at the same time) gets its
    own. A buffer replaced by a larger one is freed to torch's stream-ordered caching allocator, so a launch
    still using it on this stream is not disturbed."""
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (str(device), stream)
    ws, counters = _WORKSPACES.get(key, (None, None))
    if ws is None or ws.numel() < numel:
        ws = torch.empty(max(numel, 1 << 16), device=device, dtype=torch.float32)
    if counters is None or counters.numel() < tiles:
        counters = torch.zeros(max(tiles, 1024), device=device, dtype=torch.int32)
    _WORKSPACES[key] = (ws, counters)
    return ws, counters


def shape_class(m: int, n: int, k: int) -> str:
    return "decode" if m <= 64 else "large"


def _check(a: torch.Tensor, b: torch.Tensor) -> None:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"bad shapes for matmul: {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"matmul_tma takes two fp16 or two bf16 tensors, got {a.dtype} and {b.dtype}")
    for name, t in (("a", a), ("b", b)):
        if t.stride(1) != 1 or (t.stride(0) * t.element_size()) % 16 or t.data_ptr() % 16:
            raise ValueError(
                f"{name} must have contiguous, 16-byte aligned rows for TMA (stride {tuple(t.stride())}); "
                "call .contiguous() first"
            )


def matmul_tma(
    a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, *, config: Config | None = None
) -> torch.Tensor:
    """``a @ b`` for 2-D fp16/bf16 tensors with 16-byte aligned, contiguous rows (any M, N, K)."""
    _check(a, b)
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if out.shape != (M, N) or out.stride(1) != 1 or (out.stride(0) * out.element_size()) % 16:
        raise ValueError("out must be an M×N tensor with contiguous, 16-byte aligned rows")
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    gpu = a.is_cuda and not interpreting()
    cfg = dict(config or (CONFIGS[shape_class(M, N, K)] if gpu else INTERPRETER_CONFIG))
    host = bool(cfg.get("host_desc", False))
    if host and TensorDescriptor is None:
        raise ValueError("host_desc needs triton.tools.tensor_descriptor (Triton ≥ 3.4)")
    if gpu and not host:
        use_torch_allocator()
    BM, BN, BK = int(cfg["BM"]), int(cfg["BN"]), int(cfg["BK"])
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    split_k = int(cfg.get("SPLIT_K", 1))
    grid = (min(num_sms(a.device.index or 0), tiles * split_k),)
    launch = {"BM": BM, "BN": BN, "BK": BK, "NUM_SMS": grid[0], "UPCAST": interpreting(),
              "num_warps": int(cfg["num_warps"]), "num_stages": int(cfg["num_stages"])}  # fmt: skip
    if split_k > 1:
        m_pad = triton.cdiv(M, BM) * BM
        if split_k * m_pad * N >= 2**31:  # the kernel's workspace offsets are 32-bit
            raise ValueError(
                f"SPLIT_K={split_k} workspace of {split_k}×{m_pad}×{N} is too large; use SPLIT_K=1"
            )
        ws, counters = _workspace(a.device, split_k * m_pad * N, tiles)
        if host:
            _splitk_tma_host_kernel[grid](
                TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BK, BN]), out, ws,
                counters, M, N, K, out.stride(0), m_pad, SPLIT_K=split_k, **launch,
            )  # fmt: skip
        else:
            _splitk_tma_kernel[grid](
                a, b, out, ws, counters, M, N, K, a.stride(0), b.stride(0), out.stride(0), m_pad, SPLIT_K=split_k,
                **launch,
            )  # fmt: skip
        return out
    epi = int(cfg.get("EPI_SPLIT", 1))
    loop = {"GROUP_M": int(cfg["GROUP_M"]), "EPI_SPLIT": epi, "FLATTEN": bool(cfg.get("flatten", False)),
            "WARP_SPEC": bool(cfg.get("warp_spec", False))}  # fmt: skip
    if host:
        _persistent_tma_host_kernel[grid](
            TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BK, BN]),
            TensorDescriptor.from_tensor(out, [BM, BN // epi]), M, N, K, **loop, **launch,
        )  # fmt: skip
    else:
        _persistent_tma_kernel[grid](
            a, b, out, M, N, K, a.stride(0), b.stride(0), out.stride(0), **loop, **launch
        )  # fmt: skip
    return out


def flops(m: int, n: int, k: int) -> int:
    return 2 * m * n * k


def bytes_moved(m: int, n: int, k: int, elem_size: int) -> int:
    return (m * k + k * n + m * n) * elem_size
