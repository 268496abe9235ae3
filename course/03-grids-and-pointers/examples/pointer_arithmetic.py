"""Pointer arithmetic: from a program id to offsets, to pointers, to (possibly strided) memory.

TRITON_INTERPRET=1 python examples/pointer_arithmetic.py
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def gather_kernel(src_ptr, dst_ptr, n, src_start, src_stride, BLOCK: tl.constexpr):
    # dst[i] = src[src_start + i * src_stride] for i < n.
    # Cost model: reads n elements (scattered if src_stride > 1), writes n -> bytes >= 2 * n * element_size.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    values = tl.load(src_ptr + src_start + offsets * src_stride, mask=mask)
    tl.store(dst_ptr + offsets, values, mask=mask)


def gather(src: torch.Tensor, start: int, stride: int, n: int, block: int = 8) -> torch.Tensor:
    dst = torch.empty(n, dtype=src.dtype, device=src.device)
    if n > 0:
        gather_kernel[(triton.cdiv(n, block),)](src, dst, n, start, stride, BLOCK=block)
    return dst


def main() -> None:
    x = torch.arange(40, dtype=torch.float32, device=DEVICE)

    # Host side: addresses are bytes, and a view's data_ptr already includes its offset.
    print(f"x.data_ptr() = {x.data_ptr():#x}, element size {x.element_size()} bytes")
    for k in (1, 3, 10):
        assert x[k:].data_ptr() == x.data_ptr() + k * x.element_size()
        print(f"  &x[{k}] = &x[0] + {k} * {x.element_size()} bytes = {x[k:].data_ptr():#x}")

    # Kernel side: pointer + k means k *elements* further.
    cases = [("every element", 0, 1, 10), ("every 3rd from 2", 2, 3, 10), ("every 4th", 0, 4, 10)]
    for name, start, stride, n in cases:
        got = gather(x, start, stride, n)
        want = x[start::stride][:n]
        assert torch.equal(got, want)
        print(f"{name:>18}: {got.int().tolist()}")

    # Passing a view: its data_ptr points at its first element, and its stride tells the kernel how to walk it.
    col = x.reshape(8, 5)[:, 2]  # a column: stride 5, storage offset 2
    print(
        f"column view: shape={tuple(col.shape)} stride={col.stride()} storage_offset={col.storage_offset()}"
    )
    got = gather(col, 0, col.stride(0), col.numel())
    assert torch.equal(got, col)
    print(f"     column: {got.int().tolist()}")

    # Forgetting the stride is a silent bug: it reads the first elements of the storage instead.
    wrong = gather(col, 0, 1, col.numel())
    print(f"stride ignored (wrong): {wrong.int().tolist()}")
    assert not torch.equal(wrong, col)


if __name__ == "__main__":
    main()
