"""RMSNorm backward: ``dx = rstd·g − x·rstd³·mean(g·x)`` with ``g = dy·w``, and ``dw = Σ_rows dy·x·rstd``.

Cost model (M rows × N columns of s bytes): reads x and dy (2·M·N·s) and w, writes dx (M·N·s); the dw
partial sums add P·N·4 bytes written and read back (P ≈ 2 programs per SM, negligible for M ≫ P). So
``bytes ≈ 3·M·N·s`` and the floor is ``3·M·N·s / copy_bandwidth``; about 10 FLOPs per element: memory-bound.
The rstd of each row is recomputed from x (one extra row sum in registers) rather than saved by the forward,
which keeps the function self-contained; the forward's saved rstd would save nothing in bytes that matter.

Design: a persistent grid of P programs, each owning a contiguous band of rows. A program keeps the weight
and an fp32 dw accumulator in registers for the whole band, so dw costs one (P, N) fp32 store per program; a
second small kernel adds the P rows in a fixed order — deterministic. With ``PREFETCH`` each step loads the
next step's x and dy before its own two row reductions (a register double buffer): with one program per SM
nothing else hides the reductions' cross-warp exchanges, and the loads in flight during them are what moves
the bytes (on an H200 the main kernel goes from 70.9 % to 84.7 % of copy bandwidth at 16384 × 4096 bf16 and
66.6 % to 85.1 % at 8192 × 8192, H200 run 2026-12-03 (ba0b332); fp32 from 91.8 %, H200 run 2026-12-02
(bfc82a2), to 92.2 %). It doubles the registers x and dy take, so the default keeps a step at 8192 elements.
``atomic=True`` replaces the second kernel by ``tl.atomic_add`` into a zeroed fp32 buffer: one launch fewer,
but the order of the additions (and so the last bits of dw) changes from run to run on a GPU.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import interpreting, next_pow2, num_sms


@triton.jit
def _load_rows(ptr, start, stride, last, cols, cmask, ROWS: tl.constexpr):
    # ROWS rows from `start`, as stored; rows at or past `last` (the program's band) are masked off, not read
    rows = start + tl.arange(0, ROWS)
    mask = (rows < last)[:, None] & cmask[None, :]
    return tl.load(ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)


@triton.jit
def _rms_bwd_kernel(
    x_ptr,
    w_ptr,
    dy_ptr,
    dx_ptr,
    dw_ptr,
    M,
    N,
    rows_per_program,
    stride_xm,
    stride_dym,
    stride_dxm,
    eps,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
    ATOMIC: tl.constexpr,
    PREFETCH: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < N
    w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    first = (pid * rows_per_program).to(tl.int64)
    last = tl.minimum(first + rows_per_program, M)
    if PREFETCH:  # the first step's rows, loaded before the loop
        x_next = _load_rows(x_ptr, first, stride_xm, last, cols, cmask, ROWS)
        dy_next = _load_rows(dy_ptr, first, stride_dym, last, cols, cmask, ROWS)
    # ROWS rows per step: more loads in flight per program (a latency-bound loop otherwise)
    for start in range(first, last, ROWS):
        rows = start + tl.arange(0, ROWS)
        mask = (rows < last)[:, None] & cmask[None, :]
        if PREFETCH:  # this step's rows arrived during the last step; ask for the next step's now
            x = x_next.to(tl.float32)
            dy = dy_next.to(tl.float32)
            x_next = _load_rows(x_ptr, start + ROWS, stride_xm, last, cols, cmask, ROWS)
            dy_next = _load_rows(dy_ptr, start + ROWS, stride_dym, last, cols, cmask, ROWS)
        else:
            x = _load_rows(x_ptr, start, stride_xm, last, cols, cmask, ROWS).to(tl.float32)
            dy = _load_rows(dy_ptr, start, stride_dym, last, cols, cmask, ROWS).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + eps)
        g = dy * w[None, :]
        c = tl.sum(g * x, axis=1) / N
        dx = rstd[:, None] * g - x * (rstd * rstd * rstd * c)[:, None]
        tl.store(
            dx_ptr + rows[:, None] * stride_dxm + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=mask
        )
        dw_acc += tl.sum(dy * x * rstd[:, None], axis=0)
    if ATOMIC:
        tl.atomic_add(dw_ptr + cols, dw_acc, mask=cmask)
    else:
        tl.store(dw_ptr + pid * N + cols, dw_acc, mask=cmask)


@triton.jit
def _sum_rows_kernel(partial_ptr, out_ptr, P, N, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < N
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    for start in range(0, P, BLOCK_P):
        rows = start + tl.arange(0, BLOCK_P)
        mask = (rows < P)[:, None] & cmask[None, :]
        acc += tl.sum(tl.load(partial_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0), axis=0)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=cmask)


# x (or dy) values per thread and step up to which the next step is prefetched: above, the double buffer spills
PREFETCH_VALUES_PER_THREAD = 32


def prefetches(cfg: dict[str, int], n: int) -> bool:
    """Whether a configuration loads the next step ahead: its own key, else when the doubled x and dy stay
    within the registers (at most PREFETCH_VALUES_PER_THREAD values of each per thread and step)."""
    if "prefetch" in cfg:
        return bool(cfg["prefetch"])
    per_thread = int(cfg.get("rows", 1)) * next_pow2(n) // (int(cfg["num_warps"]) * 32)
    return per_thread <= PREFETCH_VALUES_PER_THREAD


def default_config(m: int, n: int, device: torch.device) -> dict[str, int]:
    """One program per SM, 8 warps, a step of 8192 elements (2 rows of 4096, 1 of 8192) with the next step
    prefetched: the fastest on an H200 of 24 variants at 16384 × 4096 and 8192 × 8192 bf16 and 16384 × 4096
    fp32 (H200 run 2026-12-03 (ba0b332); 2 programs per SM or 16 warps were slower in H200 run 2026-12-02
    (bfc82a2))."""
    block = next_pow2(n)
    programs = num_sms(device.index or 0) if device.type == "cuda" and not interpreting() else 4
    rows = max(1, min(4, 8192 // block))
    return {"programs": max(1, min(m, programs)), "num_warps": max(1, min(8, block // 256)), "rows": rows}


def candidate_configs(m: int, n: int, device: torch.device) -> list[dict[str, int]]:
    """The configurations `scripts/bench_lessons_11_12.py --sweep` times on a GPU (programs per SM × warps ×
    rows per step), the default first."""
    sms = num_sms(device.index or 0) if device.type == "cuda" and not interpreting() else 1
    found = [default_config(m, n, device)]
    for per_sm in (1, 2, 4):
        for warps in (4, 8, 16):
            for rows in (1, 2, 4):
                if rows * next_pow2(n) // (warps * 32) > 64:  # too many values per thread: spills
                    continue
                cfg = {"programs": max(1, min(m, sms * per_sm)), "num_warps": warps, "rows": rows}
                if cfg not in found:
                    found.append(cfg)
    return found


def rms_norm_backward(
    x: torch.Tensor,
    weight: torch.Tensor,
    dy: torch.Tensor,
    eps: float = 1e-6,
    *,
    atomic: bool = False,
    config: dict[str, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dw) of RMSNorm over the last dimension of a 2-D x (unit column stride is made if missing)."""
    if x.dim() != 2 or dy.shape != x.shape or weight.shape != (x.shape[1],):
        raise ValueError(f"shapes x {tuple(x.shape)}, dy {tuple(dy.shape)}, weight {tuple(weight.shape)}")
    x = x if x.stride(1) == 1 else x.contiguous()
    dy = dy if dy.stride(1) == 1 else dy.contiguous()
    weight = weight.contiguous()
    M, N = x.shape
    dx = torch.empty_like(x, memory_format=torch.contiguous_format)
    dw = torch.empty((N,), device=x.device, dtype=weight.dtype)
    if M == 0:
        return dx, dw.zero_()
    cfg = config or default_config(M, N, x.device)
    rows_per_program = triton.cdiv(M, int(cfg["programs"]))
    programs = triton.cdiv(M, rows_per_program)
    if atomic:
        partial = torch.zeros((N,), device=x.device, dtype=torch.float32)
    else:
        partial = torch.empty((programs, N), device=x.device, dtype=torch.float32)
    BLOCK_N = next_pow2(N)
    stages = {"num_stages": int(cfg["num_stages"])} if "num_stages" in cfg else {}  # the compiler's otherwise
    _rms_bwd_kernel[(programs,)](
        x, weight, dy, dx, partial, M, N, rows_per_program, x.stride(0), dy.stride(0), dx.stride(0), eps,
        BLOCK_N=BLOCK_N, ROWS=int(cfg.get("rows", 1)), ATOMIC=atomic, PREFETCH=prefetches(cfg, N),
        num_warps=int(cfg["num_warps"]), **stages,
    )  # fmt: skip
    if atomic:
        dw.copy_(partial)
        return dx, dw
    BLOCK_C = min(256, BLOCK_N)
    _sum_rows_kernel[(triton.cdiv(N, BLOCK_C),)](partial, dw, programs, N, BLOCK_P=16, BLOCK_C=BLOCK_C)
    return dx, dw


def bytes_moved(m: int, n: int, elem_size: int) -> int:
    """Read x and dy, write dx (the weight, dw and the fp32 partials are O(N·P), left out)."""
    return 3 * m * n * elem_size


def flops(m: int, n: int) -> int:
    """About ten operations per element."""
    return 10 * m * n
