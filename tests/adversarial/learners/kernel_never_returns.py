import torch
import triton
import triton.language as tl


@triton.jit
def forever(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(0, 1 << 40):
        acc += 1.0
    tl.store(y_ptr + offsets, acc, mask=offsets < n)


def vector_copy(x):
    y = torch.empty_like(x)
    forever[(1,)](x, y, x.numel(), BLOCK=16)
    return y
