"""Row-wise softmax ``out[i, :] = exp(x[i, :] − max_i) / Σ exp(x[i, :] − max_i)`` in fp32 arithmetic.

Cost model (M rows × N columns of s bytes): the fewest bytes are one read and one write, 2·M·N·s; about 5
FLOPs per element (max, subtract, exp, sum, scale), intensity ≤ 5/(2·s) FLOP/byte — memory-bound on any GPU.
The floor is ``2·M·N·s / copy_bandwidth``; the target is ≥ 90% of copy bandwidth on rows of 1024 to 32768.

Two kernels:

* ``onepass`` — when a row fits in the registers of one program (BLOCK_N = next_pow2(N) values spread
  over num_warps·32 threads), each program loads ROWS whole rows once, reduces in registers and writes once:
  exactly 2·M·N·s bytes. Short rows are packed ROWS to a tile so that each program still moves ≥ 16 KiB.
  With ``stages > 0`` the grid is persistent (a few programs per SM) and ``tl.range(num_stages=...)``
  prefetches the next tile while the current one is reduced.
* ``online`` — for rows too long for registers: pass 1 streams the row in CHUNK-wide pieces and keeps a
  running max and a running sum rescaled on the fly (the "online softmax" recurrence
  ``s ← s·exp(m_old − m_new) + Σ exp(x − m_new)``, one exp per element); pass 2 streams the row again and
  writes the output. The second read of a row hits L2 (rows in flight ≈ number of
  SMs × row bytes ≪ L2), so DRAM still sees about one read and one write.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import interpreting, next_pow2, num_sms

#: Launch table keyed by (next_pow2(N), element size in bytes), from the tuning run on an H200.
#: kind "onepass": rows per tile, warps, stages (0 = one tile per program, else persistent + prefetch);
#: kind "online": chunk width and warps.
CONFIGS: dict[tuple[int, int], dict[str, int | str]] = {
    (1024, 4): {"kind": "onepass", "rows": 1, "num_warps": 4, "stages": 0},
    (1024, 2): {"kind": "onepass", "rows": 2, "num_warps": 4, "stages": 0},
    (4096, 4): {"kind": "onepass", "rows": 1, "num_warps": 16, "stages": 0},
    (4096, 2): {"kind": "onepass", "rows": 1, "num_warps": 8, "stages": 0},
    (16384, 4): {"kind": "onepass", "rows": 1, "num_warps": 32, "stages": 0},
    (16384, 2): {"kind": "onepass", "rows": 1, "num_warps": 16, "stages": 0},
    (32768, 4): {"kind": "onepass", "rows": 1, "num_warps": 32, "stages": 0},
    (32768, 2): {"kind": "online", "chunk": 8192, "num_warps": 16},
}


def default_config(n: int, elem_size: int) -> dict[str, int | str]:
    """The launch configuration for rows of ``n`` columns (falls back by row length)."""
    block = next_pow2(n)
    key = (block, elem_size)
    if key in CONFIGS:
        return dict(CONFIGS[key])
    if block * 4 > 32768 * 4:  # longer than any tuned row: stream it
        return {"kind": "online", "chunk": 4096, "num_warps": 16}
    warps = max(1, min(16, block // 256))
    rows = max(1, min(16, 2048 // block))
    return {"kind": "onepass", "rows": rows, "num_warps": warps, "stages": 0}


@triton.jit
def _softmax_tile(
    x_ptr, out_ptr, tile, M, N, stride_xm, stride_om, BLOCK_N: tl.constexpr, ROWS: tl.constexpr
):
    rows = tile * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    r64 = rows.to(tl.int64)[:, None]
    x = tl.load(x_ptr + r64 * stride_xm + cols[None, :], mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    y = e * (1.0 / tl.sum(e, axis=1))[:, None]
    tl.store(out_ptr + r64 * stride_om + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_onepass_kernel(
    x_ptr,
    out_ptr,
    M,
    N,
    stride_xm,
    stride_om,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
    STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    # STAGES == 0: one tile per program, no loop around it (1-1.5 points of bandwidth at bf16, H200 run 2026-12-02
    # (69fa137))
    if STAGES == 0:
        _softmax_tile(x_ptr, out_ptr, pid, M, N, stride_xm, stride_om, BLOCK_N, ROWS)
    else:  # persistent: the programs stride over the tiles, the next tile's load prefetched
        for tile in tl.range(pid, tl.cdiv(M, ROWS), tl.num_programs(0), num_stages=STAGES):
            _softmax_tile(x_ptr, out_ptr, tile, M, N, stride_xm, stride_om, BLOCK_N, ROWS)


@triton.jit
def _softmax_online_kernel(
    x_ptr,
    out_ptr,
    N,
    stride_xm,
    stride_om,
    CHUNK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    o_row = out_ptr + row * stride_om
    cols = tl.arange(0, CHUNK)
    # pass 1: running max m and running sum s, rescaled whenever the max grows (one exp per element)
    m = tl.max(tl.load(x_row + cols, mask=cols < N, other=-float("inf")).to(tl.float32), axis=0)
    s = tl.zeros([], dtype=tl.float32)
    for start in range(0, N, CHUNK):
        x = tl.load(
            x_row + start + cols, mask=start + cols < N, other=-float("inf"), eviction_policy="evict_last"
        ).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    # pass 2: the row again (an L2 hit: it was read moments ago), normalised and written once
    inv = 1.0 / s
    for start in range(0, N, CHUNK):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf"), eviction_policy="evict_first")
        tl.store(
            o_row + start + cols, (tl.exp(x.to(tl.float32) - m) * inv).to(out_ptr.dtype.element_ty), mask=mask
        )


def softmax(
    x: torch.Tensor,
    out: torch.Tensor | None = None,
    *,
    config: dict[str, int | str] | None = None,
) -> torch.Tensor:
    """Softmax over the last dimension of a 2-D tensor (fp32, fp16 or bf16; fp32 arithmetic inside)."""
    if x.dim() != 2:
        raise ValueError(f"softmax needs a 2-D tensor, got shape {tuple(x.shape)}")
    if x.stride(1) != 1:
        x = x.contiguous()
    M, N = x.shape
    if out is None:
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if M == 0 or N == 0:
        return out
    cfg = config or default_config(N, x.element_size())
    warps = int(cfg["num_warps"])
    if cfg["kind"] == "online":
        _softmax_online_kernel[(M,)](
            x, out, N, x.stride(0), out.stride(0), CHUNK=int(cfg["chunk"]), num_warps=warps
        )
        return out
    rows = int(cfg["rows"])
    stages = int(cfg.get("stages", 0))
    tiles = triton.cdiv(M, rows)
    if stages > 0 and not interpreting():
        grid = (min(tiles, num_sms(x.device.index or 0) * int(cfg.get("per_sm", 2))),)
    else:
        grid, stages = (tiles,), 0
    _softmax_onepass_kernel[grid](
        x,
        out,
        M,
        N,
        x.stride(0),
        out.stride(0),
        BLOCK_N=next_pow2(N),
        ROWS=rows,
        STAGES=stages,
        num_warps=warps,
    )
    return out


def bytes_moved(m: int, n: int, elem_size: int) -> int:
    """One read and one write of every element."""
    return 2 * m * n * elem_size


def flops(m: int, n: int) -> int:
    """About five operations per element: max, subtract, exp, sum, scale."""
    return 5 * m * n
