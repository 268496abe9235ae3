# A real unmasked tl.store far past the end of the output buffer, on the interpreter's heap.
import torch
import triton
import triton.language as tl


@triton.jit
def smash(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)
    tl.store(y_ptr + offsets + (1 << 26), tl.zeros((BLOCK,), tl.float32) - 1.0)  # 256 MiB past the end
    tl.store(y_ptr + offsets + 4096, tl.zeros((BLOCK,), tl.float32) - 1.0)  # and the heap next door


def vector_copy(x):
    y = torch.empty(x.numel(), dtype=torch.float32)
    smash[(triton.cdiv(max(x.numel(), 1), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y.to(x.dtype)
