"""Out-of-place transpose ``out[j, i] = x[i, j]`` into a contiguous (N, M) tensor.

Cost model: reads and writes M·N·s bytes each, no FLOPs; floor ``2·M·N·s / copy_bandwidth``; target ≥ 85%
of copy bandwidth. The naive kernel that reads rows and writes columns does one of the two with stride M,
which wastes most of each 32-byte sector; here each program loads a BLOCK_M × BLOCK_N tile coalesced along
x's rows, and Triton re-lays the tile out through shared memory (``tl.trans``) so that the store is
coalesced along out's rows too. Grouping programs along M (``GROUP_M``) keeps the written rows of
neighbouring programs in the same DRAM pages.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

#: (BLOCK_M, BLOCK_N, num_warps) per element size, from the tuning run on an H200.
CONFIGS: dict[int, tuple[int, int, int]] = {4: (64, 64, 8), 2: (128, 128, 8), 1: (128, 128, 8)}
GROUP_M = 8


@triton.jit
def _transpose_kernel(
    x_ptr,
    out_ptr,
    M,
    N,
    stride_xm,
    stride_xn,
    stride_om,
    stride_on,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    GROUP_M: tl.constexpr,
    EVEN: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # column-major groups of GROUP_M tiles: consecutive programs share output rows
    per_group = GROUP_M * num_pid_n
    first_m = (pid // per_group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % size_m
    pid_n = (pid % per_group) // size_m
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    src = x_ptr + rm[:, None] * stride_xm + rn[None, :] * stride_xn
    # out is (N, M): tile element (i, j) of the transposed tile goes to out[rn[i], rm[j]]
    dst = out_ptr + rn[:, None] * stride_om + rm[None, :] * stride_on
    if EVEN:
        tile = tl.load(src)
        tl.store(dst, tl.trans(tile))
    else:
        tile = tl.load(src, mask=(rm[:, None] < M) & (rn[None, :] < N))
        tl.store(dst, tl.trans(tile), mask=(rn[:, None] < N) & (rm[None, :] < M))


def transpose(
    x: torch.Tensor,
    out: torch.Tensor | None = None,
    *,
    block_m: int | None = None,
    block_n: int | None = None,
    group_m: int = GROUP_M,
    num_warps: int | None = None,
) -> torch.Tensor:
    """Return ``x.T`` materialised as a contiguous (N, M) tensor (written into ``out`` if given)."""
    if x.dim() != 2:
        raise ValueError(f"transpose needs a 2-D tensor, got shape {tuple(x.shape)}")
    M, N = x.shape
    if out is None:
        out = torch.empty((N, M), device=x.device, dtype=x.dtype)
    if tuple(out.shape) != (N, M) or out.dtype != x.dtype:
        raise ValueError("out must have shape (N, M) and x's dtype")
    if M == 0 or N == 0:
        return out
    dbm, dbn, dw = CONFIGS.get(x.element_size(), (64, 64, 8))
    block_m, block_n, num_warps = block_m or dbm, block_n or dbn, num_warps or dw
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    _transpose_kernel[grid](
        x,
        out,
        M,
        N,
        x.stride(0),
        x.stride(1),
        out.stride(0),
        out.stride(1),
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        GROUP_M=group_m,
        EVEN=(M % block_m == 0 and N % block_n == 0),
        num_warps=num_warps,
    )
    return out


def bytes_moved(m: int, n: int, elem_size: int) -> int:
    """One read and one write of every element."""
    return 2 * m * n * elem_size
