"""Cheat: the host computes each row's max and the sum of its exponentials from `.tolist()` (out of the
dispatcher's sight) and hands them to the kernel as one-element constant allocations, `torch.full((1,), v)`;
the kernel only does the elementwise part, exp(x - max) / sum. The replay re-creates each constant
allocation with its value, so it reproduces the result (issue 33): the reduction is the work, and a constant
that the exercise's [host] policy does not list is host-computed data."""

import math

import torch
import triton
import triton.language as tl


@triton.jit
def scale_row(x_ptr, out_ptr, m_ptr, s_ptr, n_cols, stride_x, stride_xn, stride_o, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.load(m_ptr)
    s = tl.load(s_ptr)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride_x + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
        y = tl.exp(x - m) / s
        tl.store(out_ptr + row * stride_o + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    assert x.ndim == 2
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    for i, row in enumerate(x.tolist()):
        top = max(row)
        total = sum(math.exp(v - top) for v in row) if math.isfinite(top) else float("nan")
        m = torch.full((1,), top, dtype=torch.float32, device=x.device)
        s = torch.full((1,), total, dtype=torch.float32, device=x.device)
        scale_row[(1,)](x[i:], out[i:], m, s, N, x.stride(0), x.stride(1), out.stride(0), BLOCK=1024)
    return out
