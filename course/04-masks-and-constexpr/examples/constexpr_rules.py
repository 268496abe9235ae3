"""What tl.constexpr allows and forbids, shown with kernels that compile and kernels that don't.

TRITON_INTERPRET=1 python examples/constexpr_rules.py
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def fill_kernel(out_ptr, n, value, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.full((BLOCK,), value, tl.float32), mask=offsets < n)


@triton.jit
def fill_runtime_block_kernel(out_ptr, n, value, BLOCK):  # BLOCK is a run-time value: not allowed in shapes
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.full((BLOCK,), value, tl.float32), mask=offsets < n)


@triton.jit
def affine_kernel(x_ptr, out_ptr, n, scale, shift, HAS_SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    y = tl.load(x_ptr + offsets, mask=mask) * scale
    if HAS_SHIFT:  # compile-time branch: the other variant contains no addition at all
        y = y + shift
    tl.store(out_ptr + offsets, y, mask=mask)


def try_launch(label, fn) -> None:
    try:
        fn()
        print(f"  ok      {label}")
    except Exception as exc:  # InterpreterError here, triton.compiler.errors.CompilationError on a GPU
        message = str(exc).strip().splitlines()[-1]
        print(f"  refused {label}\n          {type(exc).__name__}: {message[:90]}")


def main() -> None:
    out = torch.empty(100, device=DEVICE)
    print("Block shapes must be power-of-two compile-time constants:")
    try_launch("BLOCK=64 as constexpr", lambda: fill_kernel[(2,)](out, 100, 1.5, BLOCK=64))
    try_launch(
        "BLOCK=100 as constexpr (not a power of two)", lambda: fill_kernel[(1,)](out, 100, 1.5, BLOCK=100)
    )
    try_launch("BLOCK=64 as a run-time argument", lambda: fill_runtime_block_kernel[(2,)](out, 100, 1.5, 64))

    print("\nRounding a run-time length up to a legal block:")
    for n in (3, 100, 1000, 1024, 1025):
        block = triton.next_power_of_2(n)
        print(f"  n={n:>5} -> BLOCK={block:>5}, masked lanes in one program: {block - n}")

    print("\nRun-time values may do everything that does not shape a block:")
    x = torch.arange(100, dtype=torch.float32, device=DEVICE)
    for n in (1, 37, 100):  # the same kernel serves every n: n is not constexpr
        y = torch.full_like(x, float("nan"))
        affine_kernel[(triton.cdiv(n, 64),)](x, y, n, 2.0, 1.0, HAS_SHIFT=True, BLOCK=64)
        assert torch.equal(y[:n], 2 * x[:n] + 1) and torch.isnan(y[n:]).all()
        print(f"  n={n:>3}: first {n} elements written, the rest untouched")
    y = torch.empty_like(x)
    affine_kernel[(2,)](x, y, 100, 2.0, 1.0, HAS_SHIFT=False, BLOCK=64)
    assert torch.equal(y, 2 * x)
    print("  HAS_SHIFT=False compiled a second variant without the addition")


if __name__ == "__main__":
    main()
