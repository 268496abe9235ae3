"""Cheat: the host reads x with `.tolist()` (plain Python numbers, which torch's dispatcher never sees), takes
each row's max and sum itself, and writes them into the outputs with `fill_`, one element at a time. A kernel
is launched so that something was launched; it writes nothing. The replay redoes the fills, so the launches
"alone" gave the answer: a fill with a value the host computed is host-computed data (issue 33)."""

import torch
import triton
import triton.language as tl


@triton.jit
def idle_kernel(out_ptr, n):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, tl.zeros([16], tl.float32), mask=offs < 0)  # every lane masked off


def row_reduce(x):
    assert x.ndim == 2, "row_reduce expects a 2-D tensor"
    M, N = x.shape
    row_max = torch.empty(M, device=x.device, dtype=torch.float32)
    row_sum = torch.empty(M, device=x.device, dtype=torch.float32)
    if M == 0:
        return row_max, row_sum
    idle_kernel[(1,)](row_max, M)
    for i, row in enumerate(x.tolist()):
        row_max[i].fill_(max(row))
        row_sum[i].fill_(sum(row))
    return row_max, row_sum
