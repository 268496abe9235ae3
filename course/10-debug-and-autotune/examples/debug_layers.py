"""A buggy kernel walked through the debugging layers: static checks, semantics, numerics.

Run:  TRITON_INTERPRET=1 python examples/debug_layers.py

The kernel computes the L2 norm of every row of a 2-D tensor. Version 0 has two bugs; each layer's test
exposes one, and version 2 passes them all.
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def row_norm_v0(x_ptr, out_ptr, n_cols, stride_xm, stride_xn, BLOCK_N: tl.constexpr):
    tl.static_assert(BLOCK_N >= 16, "BLOCK_N must be at least 16")
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_xm + cols, mask=cols < n_cols, other=0.0)   # bug 1: ignores stride_xn
    tl.store(out_ptr + row, tl.sqrt(tl.sum(x * x, axis=0).to(tl.float32)))       # bug 2: fp32 too late


@triton.jit
def row_norm_v1(x_ptr, out_ptr, n_cols, stride_xm, stride_xn, BLOCK_N: tl.constexpr):
    tl.static_assert(BLOCK_N >= 16, "BLOCK_N must be at least 16")
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sqrt(tl.sum(x * x, axis=0).to(tl.float32)))       # bug 2 remains


@triton.jit
def row_norm_v2(x_ptr, out_ptr, n_cols, stride_xm, stride_xn, BLOCK_N: tl.constexpr):
    tl.static_assert(BLOCK_N >= 16, "BLOCK_N must be at least 16")
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.store(out_ptr + row, tl.sqrt(tl.sum(x * x, axis=0)))


def run(kernel, x, block_n=None):
    M, N = x.shape
    out = torch.full((M,), float("nan"), device=x.device, dtype=torch.float32)  # poisoned output
    kernel[(M,)](x, out, N, x.stride(0), x.stride(1), BLOCK_N=block_n or max(16, triton.next_power_of_2(N)))
    return out


def check(label, kernel, x, rtol):
    try:
        out = run(kernel, x)
    except Exception as e:  # a compile error is a finding too
        return f"FAIL {label}: raised {type(e).__name__}"
    ref = x.double().norm(dim=1)
    bad = ~torch.isclose(out.double(), ref, rtol=rtol, atol=1e-6)
    if bad.any():
        i = int(bad.nonzero()[0][0])
        return f"FAIL {label}: {int(bad.sum())}/{bad.numel()} rows wrong, first row {i}: {out[i].item():.4g} vs {ref[i].item():.4g}"
    return f"ok   {label}"


def layer_tests(kernel):
    torch.manual_seed(0)
    lines = []
    # layer 0: a block size that violates the static assertion must be refused
    try:
        run(kernel, torch.randn(2, 5, device=DEVICE), block_n=8)
        lines.append("FAIL static: BLOCK_N=8 was accepted")
    except Exception:
        lines.append("ok   static: BLOCK_N=8 refused")
    # layer 1: semantics -- odd shape, contiguous and transposed
    x = torch.randn(7, 37, device=DEVICE)
    lines.append(check("semantics, contiguous 7x37", kernel, x, 1e-5))
    xt = torch.randn(37, 7, device=DEVICE).t()
    lines.append(check("semantics, transposed 7x37", kernel, xt, 1e-5))
    # layer 2: numerics -- fp16 values whose squares overflow fp16
    xh = (torch.randn(5, 100, device=DEVICE) * 300).half()
    lines.append(check("numerics, fp16 values ~300", kernel, xh, 2e-3))
    return lines


def main():
    for name, kernel in (("v0", row_norm_v0), ("v1", row_norm_v1), ("v2", row_norm_v2)):
        print(f"{name}:")
        for line in layer_tests(kernel):
            print("   ", line)


if __name__ == "__main__":
    main()
