"""Size a 1-D launch grid with triton.cdiv and see which program starts where.

TRITON_INTERPRET=1 python examples/grid_sizes.py
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def block_range_kernel(first_ptr, last_ptr, n, BLOCK: tl.constexpr):
    # One scalar per program: the first and last element index it is responsible for.
    pid = tl.program_id(axis=0)
    first = pid * BLOCK
    last = tl.minimum(first + BLOCK, n) - 1  # the last program may stop early
    tl.store(first_ptr + pid, first)
    tl.store(last_ptr + pid, last)


def main() -> None:
    print(f"{'n':>7} {'BLOCK':>6} {'n // BLOCK':>10} {'cdiv':>6} {'real elements in last program':>30}")
    for n, block in [(10, 4), (12, 4), (1, 128), (1000, 128), (98432, 1024), (98433, 1024)]:
        programs = triton.cdiv(n, block)
        assert programs == (n + block - 1) // block
        last_real = n - (programs - 1) * block
        print(f"{n:>7} {block:>6} {n // block:>10} {programs:>6} {last_real:>30}")

    n, block = 10, 4
    grid = (triton.cdiv(n, block),)
    first = torch.full(grid, -1, dtype=torch.int32, device=DEVICE)
    last = torch.full(grid, -1, dtype=torch.int32, device=DEVICE)
    block_range_kernel[grid](first, last, n, BLOCK=block)
    print(f"\nn={n}, BLOCK={block}: {grid[0]} programs")
    for pid, (a, b) in enumerate(zip(first.tolist(), last.tolist(), strict=True)):
        print(f"  program {pid} covers elements {a}..{b}")
    assert first.tolist() == [0, 4, 8] and last.tolist() == [3, 7, 9]

    # The same launch with a grid function: Triton passes the compile-time parameters as `meta`.
    first.fill_(-1)
    block_range_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](first, last, n, BLOCK=block)
    assert first.tolist() == [0, 4, 8]
    print("grid function gave the same result")


if __name__ == "__main__":
    main()
