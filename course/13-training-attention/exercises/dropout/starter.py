"""Exercise dropout: residual + dropout(x), whose mask is never stored.

dropout_add(x, residual, p, seed, offset=0) -> y
    x, residual: 2-D (M, N), any strides, float32, float16 or bfloat16
    y = residual + x * mask / (1 - p), a new contiguous (M, N) tensor, x's dtype, computed in ONE kernel
dropout_add_backward(grad, p, seed, offset=0) -> dx
    dx = grad * mask / (1 - p), a new contiguous (M, N) tensor, grad's dtype
mask[r, c] is 1 with probability 1 - p, decided by ONE uniform number for the counter offset + r*N + c under
`seed` (tl.rand). Nothing is stored between the two calls: the backward draws the mask again.
p outside [0, 1) raises ValueError.

Check it with:  tritonlab check dropout
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def dropout_add_kernel(x_ptr, res_ptr, y_ptr, n, n_cols, sxr, sxc, srr, src, p, seed, offset,
                       BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = idx < n
    row = idx // n_cols
    col = idx % n_cols
    x = tl.load(x_ptr + row * sxr + col * sxc, mask=ok, other=0.0).to(tl.float32)
    res = tl.load(res_ptr + row * srr + col * src, mask=ok, other=0.0).to(tl.float32)
    y = res + x  # TODO: drop x with probability p (tl.rand), scale what is kept
    tl.store(y_ptr + idx, y.to(y_ptr.dtype.element_ty), mask=ok)


def dropout_add(x, residual, p, seed, offset=0):
    M, N = x.shape
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if y.numel() == 0:
        return y
    BLOCK = 1024
    dropout_add_kernel[(triton.cdiv(M * N, BLOCK),)](x, residual, y, M * N, N, *x.stride(), *residual.stride(),
                                                     p, seed, offset, BLOCK=BLOCK)
    return y


def dropout_add_backward(grad, p, seed, offset=0):
    # TODO: a kernel that draws the same mask again
    raise NotImplementedError


if __name__ == "__main__":
    x, res, g = (torch.randn(64, 300, device=DEVICE) for _ in range(3))
    y = dropout_add(x, res, 0.3, seed=1234, offset=77)
    dx = dropout_add_backward(g, 0.3, seed=1234, offset=77)
    print("keep rate", (dx != 0).float().mean().item(), "same mask:", torch.equal(y != res, dx != 0))
