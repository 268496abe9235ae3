"""Vector addition: kernel, safe host wrapper, and a check on awkward sizes and layouts.

TRITON_INTERPRET=1 python examples/vector_add.py
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BLOCK = 1024


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Cost model: reads 2n elements, writes n -> bytes = 3 * n * element_size; n additions.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if x.dtype.is_fp16() or x.dtype.is_bf16():
        result = (x.to(tl.float32) + y.to(tl.float32)).to(x.dtype)  # add in fp32, round once
    else:
        result = x + y
    tl.store(out_ptr + offsets, result, mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x + y for same-shape, same-dtype, same-device tensors; returns a new contiguous tensor."""
    if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
        raise TypeError("vector_add expects two torch.Tensor arguments")
    if x.shape != y.shape:
        raise ValueError(f"vector_add: shapes differ: x is {tuple(x.shape)}, y is {tuple(y.shape)}")
    if x.dtype != y.dtype:
        raise ValueError(f"vector_add: dtypes differ: x is {x.dtype}, y is {y.dtype}")
    if x.device != y.device:
        raise ValueError(f"vector_add: devices differ: x is on {x.device}, y is on {y.device}")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)  # contiguous even if x is not
    n = out.numel()
    if n == 0:
        return out  # no elements: no launch
    xc, yc = x.contiguous(), y.contiguous()  # no-op when already contiguous, a copy otherwise
    add_kernel[(triton.cdiv(n, BLOCK),)](xc, yc, out, n, BLOCK=BLOCK)
    return out


def main() -> None:
    print(f"{'case':<34} {'programs':>8}  result")
    cases = []
    for n in (0, 1, 7, BLOCK - 1, BLOCK, BLOCK + 1, 98432):
        cases.append((f"1-D, n={n}", torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)))
    cases.append(("0-d", torch.randn((), device=DEVICE), torch.randn((), device=DEVICE)))
    cases.append(("3-D (4, 5, 6)", torch.randn(4, 5, 6, device=DEVICE), torch.randn(4, 5, 6, device=DEVICE)))
    m = torch.randn(64, 48, device=DEVICE)
    cases.append(("transposed + contiguous", m.t(), torch.randn(48, 64, device=DEVICE)))
    cases.append(("strided slices", m[::2, ::3], m[1::2, 1::3]))
    for dtype in (torch.float16, torch.bfloat16):
        cases.append(
            (
                f"{dtype}, n=3000",
                torch.randn(3000, device=DEVICE).to(dtype),
                torch.randn(3000, device=DEVICE).to(dtype),
            )
        )
    for name, x, y in cases:
        out = vector_add(x, y)
        tol = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 1.6e-2}[x.dtype]
        ok = out.shape == x.shape and out.dtype == x.dtype and out.is_contiguous()
        ok = ok and torch.allclose(out.float(), (x + y).float(), rtol=tol, atol=1e-5)
        print(f"{name:<34} {triton.cdiv(x.numel(), BLOCK):>8}  {'ok' if ok else 'WRONG'}")
        assert ok, name

    for bad in [(torch.ones(3), torch.ones(4)), (torch.ones(3), torch.ones(3, dtype=torch.float16))]:
        try:
            vector_add(bad[0].to(DEVICE), bad[1].to(DEVICE))
        except ValueError as exc:
            print(f"refused as expected: {exc}")
        else:
            raise AssertionError("mismatched inputs were accepted")


if __name__ == "__main__":
    main()
