"""RMSNorm ``out = x / sqrt(mean(x², −1) + eps) · weight`` over the last dimension, fp32 arithmetic inside.

Cost model (M rows × N columns of s bytes, weight of N elements): reads M·N·s + N·s bytes, writes M·N·s
bytes (weight stays in L2), about 4 FLOPs per element (square, add, scale, multiply): memory-bound. The floor
is ``2·M·N·s / copy_bandwidth``.

Design: like softmax's one-pass kernel — ROWS whole rows per tile held in registers, one read and one write
per element, the weight loaded once per program and reused across the rows it handles (persistent grid,
``stages > 0``). Rows too long for registers take the looping kernel: pass 1 accumulates Σx² in chunks, pass 2
re-reads the row (from L2) and writes it.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._common import interpreting, next_pow2, num_sms

CONFIGS: dict[tuple[int, int], dict[str, int | str]] = {
    (4096, 2): {"kind": "onepass", "rows": 1, "num_warps": 4, "stages": 0},
    (4096, 4): {"kind": "onepass", "rows": 2, "num_warps": 16, "stages": 0},
    (8192, 2): {"kind": "onepass", "rows": 2, "num_warps": 16, "stages": 0},
    (8192, 4): {"kind": "onepass", "rows": 1, "num_warps": 16, "stages": 0},
}


def default_config(n: int, elem_size: int) -> dict[str, int | str]:
    """The launch configuration for rows of ``n`` columns."""
    block = next_pow2(n)
    if (block, elem_size) in CONFIGS:
        return dict(CONFIGS[(block, elem_size)])
    if block > 32768:
        return {"kind": "looped", "chunk": 4096, "num_warps": 16}
    return {
        "kind": "onepass",
        "rows": max(1, min(16, 4096 // block)),
        "num_warps": max(1, min(16, block // 256)),
        "stages": 0,
    }


@triton.jit
def _rms_norm_onepass_kernel(
    x_ptr,
    w_ptr,
    out_ptr,
    M,
    N,
    stride_xm,
    stride_om,
    eps,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
    STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < N
    w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    for tile in tl.range(pid, tl.cdiv(M, ROWS), nprog, num_stages=STAGES):
        rows = tile * ROWS + tl.arange(0, ROWS)
        mask = (rows < M)[:, None] & cmask[None, :]
        r64 = rows.to(tl.int64)[:, None]
        x = tl.load(x_ptr + r64 * stride_xm + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + eps)
        y = x * inv[:, None] * w[None, :]
        tl.store(out_ptr + r64 * stride_om + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rms_norm_looped_kernel(x_ptr, w_ptr, out_ptr, N, stride_xm, stride_om, eps, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, CHUNK)
    acc = tl.zeros([CHUNK], tl.float32)
    for start in range(0, N, CHUNK):
        x = tl.load(x_ptr + row * stride_xm + start + cols, mask=start + cols < N, other=0.0).to(tl.float32)
        acc += x * x
    inv = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, CHUNK):
        mask = start + cols < N
        x = tl.load(x_ptr + row * stride_xm + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(
            out_ptr + row * stride_om + start + cols, (x * inv * w).to(out_ptr.dtype.element_ty), mask=mask
        )


def rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    out: torch.Tensor | None = None,
    *,
    config: dict[str, int | str] | None = None,
) -> torch.Tensor:
    """RMSNorm of a 2-D tensor over its last dimension, scaled by ``weight`` (shape (N,))."""
    if x.dim() != 2:
        raise ValueError(f"rms_norm needs a 2-D tensor, got shape {tuple(x.shape)}")
    if x.stride(1) != 1:
        x = x.contiguous()
    M, N = x.shape
    if weight.shape != (N,):
        raise ValueError(f"weight must have shape ({N},), got {tuple(weight.shape)}")
    weight = weight.contiguous()
    if out is None:
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if M == 0:
        return out
    cfg = config or default_config(N, x.element_size())
    warps = int(cfg["num_warps"])
    if cfg["kind"] == "looped":
        _rms_norm_looped_kernel[(M,)](
            x, weight, out, N, x.stride(0), out.stride(0), eps, CHUNK=int(cfg["chunk"]), num_warps=warps
        )
        return out
    rows = int(cfg["rows"])
    stages = int(cfg.get("stages", 0))
    tiles = triton.cdiv(M, rows)
    if stages > 0 and not interpreting():
        grid = (min(tiles, num_sms(x.device.index or 0) * int(cfg.get("per_sm", 2))),)
    else:
        grid = (tiles,)
    _rms_norm_onepass_kernel[grid](
        x,
        weight,
        out,
        M,
        N,
        x.stride(0),
        out.stride(0),
        eps,
        BLOCK_N=next_pow2(N),
        ROWS=rows,
        STAGES=max(stages, 1),
        num_warps=warps,
    )
    return out


def bytes_moved(m: int, n: int, elem_size: int) -> int:
    """One read and one write of x plus one read of the weight."""
    return 2 * m * n * elem_size + n * elem_size


def flops(m: int, n: int) -> int:
    """About four operations per element."""
    return 4 * m * n
