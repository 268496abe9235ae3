"""The error budget of fp8 against bf16: how far the product of rounded inputs lands from the exact product.

Everything is computed in float64 from inputs rounded to bf16 or to e4m3 (with one scale per tensor, or per
block: 1×128 groups for the activations, 128×128 blocks for the weights), so what is measured is the rounding
of the inputs alone — a correct kernel's fp32 products and sums add errors near 2**-24, far below these.
tests/test_lesson14.py holds lesson 14's numbers to this file's output.
"""

import torch

GROUP = 128
OUTLIER = 1e5


def relative_error(approx, exact):
    return ((approx - exact).norm() / exact.norm()).item()


def per_tensor(x):
    s = x.abs().max() / 448.0
    return (x / s).to(torch.float8_e4m3fn).double() * s


def per_block(x, rows_per_block):
    """Scale each (rows_per_block × 128) block so that its largest magnitude becomes 448."""
    out = torch.empty_like(x)
    for r in range(0, x.shape[0], rows_per_block):
        for c in range(0, x.shape[1], GROUP):
            block = x[r:r + rows_per_block, c:c + GROUP]
            s = block.abs().max().clamp(min=1e-300) / 448.0
            out[r:r + rows_per_block, c:c + GROUP] = (block / s).to(torch.float8_e4m3fn).double() * s
    return out


def budget(seed=0, m=256, n=256, k=1024, outlier=None):
    """Relative errors (Frobenius norm) of the three products; with `outlier`, a[0, 0] is set to it and the
    errors are those of the other rows."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g, dtype=torch.float64)
    w = torch.randn(n, k, generator=g, dtype=torch.float64)
    if outlier is not None:
        x[0, 0] = outlier
    exact = x @ w.t()
    bf16 = x.to(torch.bfloat16).double() @ w.to(torch.bfloat16).double().t()
    tensor = per_tensor(x) @ per_tensor(w).t()
    block = per_block(x, 1) @ per_block(w, GROUP).t()
    if outlier is not None:  # judge the rows the outlier is not in: what one large value does to the others
        exact, bf16, tensor, block = exact[1:], bf16[1:], tensor[1:], block[1:]
    return {
        "bf16": relative_error(bf16, exact),
        "fp8_per_tensor": relative_error(tensor, exact),
        "fp8_per_block": relative_error(block, exact),
    }


if __name__ == "__main__":
    plain = budget()
    spiky = budget(outlier=OUTLIER)
    for name, result in (("Gaussian data", plain), (f"one entry of a = {OUTLIER:g}, the other rows", spiky)):
        print(f"{name}: " + ", ".join(f"{k} {100 * v:.2f} %" for k, v in result.items()))
    print(f"fp8 per block / bf16 on Gaussian data: {plain['fp8_per_block'] / plain['bf16']:.1f}x")
