"""Masks at the edges, and why the `other` value of a masked load must match the computation.

TRITON_INTERPRET=1 python examples/masks_and_other.py
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def lane_report_kernel(offsets_ptr, mask_ptr, n, BLOCK: tl.constexpr):
    # Records, for every lane of every program, its offset and whether its mask is on.
    # Output buffers have grid * BLOCK entries, so these stores never need a mask.
    pid = tl.program_id(axis=0)
    lanes = tl.arange(0, BLOCK)
    offsets = pid * BLOCK + lanes
    tl.store(offsets_ptr + pid * BLOCK + lanes, offsets)
    tl.store(mask_ptr + pid * BLOCK + lanes, (offsets < n).to(tl.int32))


@triton.jit
def block_reduce_kernel(
    x_ptr, sum_ptr, max_ptr, n, SUM_PAD: tl.constexpr, MAX_PAD: tl.constexpr, BLOCK: tl.constexpr
):
    # One partial sum and one partial max per program.
    # Cost model: reads n elements, writes 2 * grid values.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    for_sum = tl.load(x_ptr + offsets, mask=mask, other=SUM_PAD)
    for_max = tl.load(x_ptr + offsets, mask=mask, other=MAX_PAD)
    tl.store(sum_ptr + pid, tl.sum(for_sum, axis=0))
    tl.store(max_ptr + pid, tl.max(for_max, axis=0))


def main() -> None:
    n, block = 10, 4
    grid = triton.cdiv(n, block)
    offsets = torch.empty(grid * block, dtype=torch.int32, device=DEVICE)
    mask = torch.empty(grid * block, dtype=torch.int32, device=DEVICE)
    lane_report_kernel[(grid,)](offsets, mask, n, BLOCK=block)
    print(f"n={n}, BLOCK={block}, grid={grid}")
    for pid in range(grid):
        o = offsets[pid * block : (pid + 1) * block].tolist()
        m = [bool(v) for v in mask[pid * block : (pid + 1) * block].tolist()]
        print(f"  program {pid}: offsets {o} mask {m}")
    assert mask.sum().item() == n  # exactly n lanes are active, one per element

    # All-negative data: the right padding is 0 for a sum and -inf for a max.
    n, block = 1000, 128
    grid = triton.cdiv(n, block)
    x = -1.0 - torch.rand(n, device=DEVICE)
    sums = torch.empty(grid, device=DEVICE)
    maxima = torch.empty(grid, device=DEVICE)
    for sum_pad, max_pad, label in [
        (0.0, float("-inf"), "identities (0, -inf)"),
        (0.0, 0.0, "max padded with 0"),
        (1.0, float("-inf"), "sum padded with 1"),
    ]:
        block_reduce_kernel[(grid,)](x, sums, maxima, n, SUM_PAD=sum_pad, MAX_PAD=max_pad, BLOCK=block)
        sum_ok = torch.allclose(sums.sum(), x.sum())
        max_ok = maxima.max().item() == x.max().item()
        print(f"{label:>22}: total sum correct={sum_ok}, max correct={max_ok}")
        if label.startswith("identities"):
            assert sum_ok and max_ok
        else:
            assert not (sum_ok and max_ok)  # a wrong padding shows up in the last, partial block


if __name__ == "__main__":
    main()
