"""A stride-aware 2-D add, checked on every pair of layouts and on three dtypes.

Run:  TRITON_INTERPRET=1 python examples/layout_add.py
"""

import itertools

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def add_2d_kernel(x_ptr, y_ptr, out_ptr, M, N,
                  sxm, sxn, sym, syn, som, son,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # reads 2·M·N, writes M·N elements -> bytes = 3·M·N·size
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * sxm + offs_n[None, :] * sxn, mask=mask)
    y = tl.load(y_ptr + offs_m[:, None] * sym + offs_n[None, :] * syn, mask=mask)
    z = x.to(tl.float32) + y.to(tl.float32)
    tl.store(out_ptr + offs_m[:, None] * som + offs_n[None, :] * son, z.to(out_ptr.dtype.element_ty), mask=mask)


def add_2d(x, y, block_m=32, block_n=32):
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
    add_2d_kernel[grid](x, y, out, M, N, *x.stride(), *y.stride(), *out.stride(),
                        BLOCK_M=block_m, BLOCK_N=block_n)
    return out


def make(layout, M, N, dtype):
    if layout == "contiguous":
        return torch.randn(M, N, device=DEVICE, dtype=dtype)
    if layout == "transposed":
        return torch.randn(N, M, device=DEVICE, dtype=dtype).t()
    if layout == "sliced":
        return torch.randn(M + 3, N + 7, device=DEVICE, dtype=dtype)[2:2 + M, 5:5 + N]
    if layout == "strided rows":
        return torch.randn(3 * M, N, device=DEVICE, dtype=dtype)[::3]
    raise ValueError(layout)


def main():
    layouts = ["contiguous", "transposed", "sliced", "strided rows"]
    shapes = [(1, 1), (17, 1), (37, 23), (33, 65)]
    checked = 0
    # every pair of layouts in fp32, then each layout in the two 16-bit types
    cases = [(lx, ly, torch.float32) for lx, ly in itertools.product(layouts, layouts)]
    cases += [(lx, "contiguous", dt) for lx in layouts for dt in (torch.float16, torch.bfloat16)]
    for (M, N), (lx, ly, dtype) in itertools.product(shapes, cases):
        x, y = make(lx, M, N, dtype), make(ly, M, N, dtype)
        out = add_2d(x, y)
        ref = (x.double() + y.double()).to(dtype)
        assert out.is_contiguous() and out.dtype == dtype
        torch.testing.assert_close(out, ref, msg=f"{lx} + {ly}, {M}x{N}, {dtype}")
        checked += 1
    print(f"add_2d matched the float64 reference in {checked} cases "
          f"({len(shapes)} shapes x {len(cases)} layout/dtype combinations)")


if __name__ == "__main__":
    main()
