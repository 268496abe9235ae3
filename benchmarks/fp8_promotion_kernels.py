"""The kernels benchmarks/fp8_promotion.py sets against the block-scaled fp8 GEMM (perf/kernels/matmul_fp8.py):
persistent, TMA descriptors, the course's grouped tile order (matmul_tma's `_tile_coords`). A module of its own
so that `fp8_promotion.py --help` imports no Triton. Tiles are at most one weight scale block wide (BN ≤ BK),
as in the shipped configuration, except in `per_column`, which takes any BN."""

from __future__ import annotations

import triton
import triton.language as tl

from tritonlab.perf.kernels.matmul_tma import _tile_coords


@triton.jit
def one_acc(a_desc, w_desc, c_desc, scale, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
            GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):  # fmt: skip
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BK)):
            a = a_desc.load([pid_m * BM, ki * BK])
            w = w_desc.load([pid_n * BN, ki * BK])
            acc = tl.dot(a, w.T, acc)
        c_desc.store([pid_m * BM, pid_n * BN], (acc * scale).to(c_desc.dtype))


@triton.jit
def lookahead(a_desc, w_desc, c_desc, sa_ptr, sw_ptr, M, N, K, stride_sam, stride_sak, stride_swn,
              stride_swk, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
              NUM_SMS: tl.constexpr):  # fmt: skip
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        rm = pid_m * BM + tl.arange(0, BM)
        sa_rows = sa_ptr + tl.minimum(rm, M - 1).to(tl.int64) * stride_sam
        sw_block = sw_ptr + ((pid_n * BN) // BK).to(tl.int64) * stride_swn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        part = tl.dot(a_desc.load([pid_m * BM, 0]), w_desc.load([pid_n * BN, 0]).T)
        for ki in range(1, k_tiles):  # the next group's product issued before this one is scaled and added
            nxt = tl.dot(a_desc.load([pid_m * BM, ki * BK]), w_desc.load([pid_n * BN, ki * BK]).T)
            scale = tl.load(sa_rows + (ki - 1) * stride_sak) * tl.load(sw_block + (ki - 1) * stride_swk)
            acc = tl.fma(part, scale[:, None], acc)
            part = nxt
        scale = tl.load(sa_rows + (k_tiles - 1) * stride_sak) * tl.load(sw_block + (k_tiles - 1) * stride_swk)
        acc = tl.fma(part, scale[:, None], acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


@triton.jit
def per_column(a_desc, w_desc, c_desc, sa_ptr, sw_ptr, M, N, K, stride_sam, stride_sak, stride_swn,
               stride_swk, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
               NUM_SMS: tl.constexpr):  # fmt: skip
    """The promotion as matmul_fp8 first shipped it, before it became one fused multiply-add: a weight scale
    loaded for every column a thread holds, two multiplies and an add per element."""
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        sa_rows = sa_ptr + tl.minimum(rm, M - 1).to(tl.int64) * stride_sam
        sw_rows = sw_ptr + (tl.minimum(rn, N - 1) // BK).to(tl.int64) * stride_swn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BK)):
            part = tl.dot(a_desc.load([pid_m * BM, ki * BK]), w_desc.load([pid_n * BN, ki * BK]).T)
            sa = tl.load(sa_rows + ki * stride_sak)
            sw = tl.load(sw_rows + ki * stride_swk)
            acc += part * sa[:, None] * sw[None, :]
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))
