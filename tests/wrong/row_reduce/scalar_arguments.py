"""Cheat: the host computes each row's max and sum from `x.tolist()` and hands them to a kernel as float
arguments, one launch per row; the kernel only stores its arguments. The record carries the floats bit for
bit, so a replay that trusts scalar arguments reproduces the answer (issue 33): a float argument that is not
one of the exercise's declared scalars is host-computed."""

import torch
import triton
import triton.language as tl


@triton.jit
def store_two(max_ptr, sum_ptr, row, m, s):
    tl.store(max_ptr + row, m)
    tl.store(sum_ptr + row, s)


def row_reduce(x):
    assert x.ndim == 2, "row_reduce expects a 2-D tensor"
    M, N = x.shape
    row_max = torch.empty(M, device=x.device, dtype=torch.float32)
    row_sum = torch.empty(M, device=x.device, dtype=torch.float32)
    for i, row in enumerate(x.tolist()):
        store_two[(1,)](row_max, row_sum, i, float(max(row)), float(sum(row)))
    return row_max, row_sum
