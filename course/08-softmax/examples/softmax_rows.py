"""A one-block row softmax, validated on shapes, layouts, dtypes and -inf masks.

Run:  TRITON_INTERPRET=1 python examples/softmax_rows.py
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def softmax_row_kernel(x_ptr, y_ptr, n_cols, sxm, sxn, sym, syn, BLOCK_N: tl.constexpr):
    # reads M·N, writes M·N elements -> bytes = 2·M·N·size
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sxm + cols * sxn, mask=mask, other=-float("inf")).to(tl.float32)  # 1. load
    m = tl.max(x, axis=0)                                                                         # 2. max
    e = tl.exp(x - m)                                                                             # 3. exp
    s = tl.sum(e, axis=0)                                                                         # 4. sum
    tl.store(y_ptr + row * sym + cols * syn, (e / s).to(y_ptr.dtype.element_ty), mask=mask)       # 5. store


def softmax_one_block(x):
    M, N = x.shape
    BLOCK_N = triton.next_power_of_2(N)
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    softmax_row_kernel[(M,)](x, y, N, x.stride(0), x.stride(1), y.stride(0), y.stride(1), BLOCK_N=BLOCK_N)
    return y


def main():
    torch.manual_seed(0)
    checked = 0
    tolerances = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}
    for M, N in [(1, 1), (1, 17), (17, 1), (37, 100), (8, 1000)]:
        for dtype, atol in tolerances.items():
            for layout in ("contiguous", "transposed"):
                base = torch.randn(M, N, device=DEVICE) if layout == "contiguous" else torch.randn(N, M, device=DEVICE).t()
                x = (base * 30).to(dtype)
                if N > 2:
                    x[0, ::2] = -float("inf")          # a partly masked row
                    x[-1, 0] = 1e4 if dtype == torch.float32 else 6e4
                ref = torch.softmax(x.double(), dim=-1)
                y = softmax_one_block(x)
                assert y.dtype == dtype and y.is_contiguous()
                torch.testing.assert_close(y.double(), ref, atol=atol, rtol=0, msg=f"{M}x{N} {dtype} {layout}")
                checked += 1
    print(f"one-block softmax matched float64 torch.softmax in {checked} cases")

    # an entirely -inf row gives NaN, exactly like torch
    x = torch.full((2, 5), -float("inf"), device=DEVICE)
    x[1] = torch.arange(5.0)
    y = softmax_one_block(x)
    print("all -inf row ->", y[0].tolist(), "| torch ->", torch.softmax(x, dim=-1)[0].tolist())


if __name__ == "__main__":
    main()
