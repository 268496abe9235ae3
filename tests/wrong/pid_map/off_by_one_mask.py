"""Wrong: the store mask uses `<=`: one element past the end is written."""

import torch
import triton
import triton.language as tl


@triton.jit
def pid_kernel(out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, tl.zeros((BLOCK_SIZE,), dtype=tl.int32) + pid, mask=offsets <= n)


def pid_map(n, block_size, device):
    out = torch.empty(n, dtype=torch.int32, device=device)
    if n:
        pid_kernel[(triton.cdiv(n, block_size),)](out, n, BLOCK_SIZE=block_size)
    return out
