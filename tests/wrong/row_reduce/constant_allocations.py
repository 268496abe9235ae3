"""Cheat: one constant allocation per value. The host computes each row's max and sum from `x.tolist()`,
makes `torch.full((1,), value)` for each, and a kernel copies each one-element tensor into place. The replay
re-creates constant allocations with their constant, so the copies "alone" gave the answer (issue 33): a
constant the exercise's [host] policy does not list is host-computed data."""

import torch
import triton
import triton.language as tl


@triton.jit
def copy_two(m_src, s_src, max_ptr, sum_ptr, row):
    tl.store(max_ptr + row, tl.load(m_src))
    tl.store(sum_ptr + row, tl.load(s_src))


def row_reduce(x):
    assert x.ndim == 2, "row_reduce expects a 2-D tensor"
    M, N = x.shape
    row_max = torch.empty(M, device=x.device, dtype=torch.float32)
    row_sum = torch.empty(M, device=x.device, dtype=torch.float32)
    for i, row in enumerate(x.tolist()):
        m = torch.full((1,), max(row), dtype=torch.float32, device=x.device)
        s = torch.full((1,), sum(row), dtype=torch.float32, device=x.device)
        copy_two[(1,)](m, s, row_max, row_sum, i)
    return row_max, row_sum
