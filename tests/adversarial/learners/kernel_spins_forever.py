# A kernel that never returns: it spins on a flag nothing ever sets. On a GPU the launch is asynchronous and
# the process blocks in the synchronize that reads the output; on the interpreter the loop runs in Python.
# Either way only the wall-clock limit ends it (and on a GPU, killing the process frees the device).
import torch
import triton
import triton.language as tl


@triton.jit
def spin(flag_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    flag = tl.load(flag_ptr)
    while flag == 0:
        flag = tl.load(flag_ptr, volatile=True)
    tl.store(out_ptr + offsets, flag, mask=offsets < n)


def vector_copy(x):
    flag = torch.zeros(1, dtype=torch.int32, device=x.device)
    out = torch.empty_like(x)
    spin[(triton.cdiv(x.numel(), 128),)](flag, out, x.numel(), BLOCK=128)
    return out
