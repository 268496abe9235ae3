"""Row-major versus grouped launch order: which tile each program computes, and what a wave loads.

Run:  TRITON_INTERPRET=1 python examples/tile_order.py
"""

import torch
import triton

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def tile_of(pid, tiles_m, tiles_n, group_m):
    """The same integer arithmetic as the kernels of lesson 9 (group_m = 1 is row-major)."""
    per_group = group_m * tiles_n
    first_m = (pid // per_group) * group_m
    rows_here = min(tiles_m - first_m, group_m)
    local = pid % per_group
    return first_m + local % rows_here, local // rows_here


def order_grid(tiles_m, tiles_n, group_m):
    grid = [[0] * tiles_n for _ in range(tiles_m)]
    for pid in range(tiles_m * tiles_n):
        r, c = tile_of(pid, tiles_m, tiles_n, group_m)
        grid[r][c] = pid
    return grid


def wave_blocks(tiles_m, tiles_n, group_m, wave):
    tiles = [tile_of(p, tiles_m, tiles_n, group_m) for p in range(min(wave, tiles_m * tiles_n))]
    return len({r for r, _ in tiles}), len({c for _, c in tiles})


def main():
    tiles_m, tiles_n = 6, 8  # deliberately not a multiple of GROUP_M: the last group is shorter
    for group_m in (1, 4):
        print(f"launch order, {tiles_m} x {tiles_n} tiles, GROUP_M = {group_m}:")
        for row in order_grid(tiles_m, tiles_n, group_m):
            print("   " + " ".join(f"{p:3d}" for p in row))
        tiles = sorted(tile_of(p, tiles_m, tiles_n, group_m) for p in range(tiles_m * tiles_n))
        assert tiles == [(r, c) for r in range(tiles_m) for c in range(tiles_n)], "not a permutation"
    print()

    # A realistic case: M = N = 4096 with 128 x 128 tiles, first wave = one program per SM of an H200 (132).
    M = N = K = 4096
    bm = bn = 128
    tm, tn = triton.cdiv(M, bm), triton.cdiv(N, bn)
    block_mib = bm * K * 2 / 2**20  # one block-row of A (or block-column of B) in bf16
    for group_m in (1, 2, 4, 8, 16):
        a, b = wave_blocks(tm, tn, group_m, 132)
        print(f"GROUP_M={group_m:2d}: first 132 programs load {a:2d} blocks of A + {b:2d} of B "
              f"= {(a + b) * block_mib:5.1f} MiB of bf16 operands")
    print("(GROUP_M = 2 or 4 does worse than row-major here: a group of GROUP_M x 32 tiles is smaller than the")
    print(" 132-program wave, so the wave spills into a second group and touches every column of B again.)")


if __name__ == "__main__":
    main()
