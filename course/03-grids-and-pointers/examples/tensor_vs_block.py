"""Host-side tensor metadata versus kernel-side blocks.

TRITON_INTERPRET=1 python examples/tensor_vs_block.py
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def describe_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    values = tl.load(x_ptr + offsets, mask=mask, other=0)
    doubled = values * 2
    # Printed at compile time on a GPU, at every launch on the interpreter.
    tl.static_print(
        "  kernel sees:",
        "x_ptr",
        x_ptr.dtype,
        "| offsets",
        offsets.dtype,
        offsets.shape,
        "| mask",
        mask.dtype,
        "| values",
        values.dtype,
        "| BLOCK =",
        BLOCK,
    )
    tl.store(out_ptr + offsets, doubled, mask=mask)


def describe(name: str, t: torch.Tensor, base: int) -> None:
    print(
        f"{name:10} shape={tuple(t.shape)!s:8} stride={t.stride()!s:8} dtype={t.dtype!s:15} "
        f"device={t.device} contiguous={t.is_contiguous()!s:5} data_ptr=base+{t.data_ptr() - base} bytes"
    )


def main() -> None:
    m = torch.arange(24, dtype=torch.float32, device=DEVICE).reshape(4, 6)
    print("Host side: one storage, four tensors that differ only in metadata")
    for name, view in [("m", m), ("m.t()", m.t()), ("m[1]", m[1]), ("m[:, 2]", m[:, 2])]:
        describe(name, view, m.data_ptr())
    assert m.t().data_ptr() == m.data_ptr()  # a transpose moves no data

    print("\nKernel side: only the address and the dtype cross the launch")
    for dtype, block in [(torch.float32, 8), (torch.float16, 16), (torch.int32, 8)]:
        x = torch.arange(10, device=DEVICE).to(dtype)
        out = torch.empty_like(x)
        describe_kernel[(triton.cdiv(x.numel(), block),)](x, out, x.numel(), BLOCK=block)
        assert torch.equal(out, x * 2)


if __name__ == "__main__":
    main()
