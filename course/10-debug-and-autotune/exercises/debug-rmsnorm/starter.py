"""Exercise debug-rmsnorm: find and fix the bugs in a complete RMSNorm kernel.

rms_norm(x, weight, eps=1e-6) -> y with y[i, :] = x[i, :] * rsqrt(mean(x[i, :]**2) + eps) * weight
x: (M, N) with any strides, fp32 / fp16 / bf16; weight: (N,); y: new contiguous (M, N) tensor, x's dtype.

The program below runs, and on some inputs it even gives the right answer. Test it the way lesson 10
describes -- odd sizes, strided views, 16-bit dtypes, small and large values, a float64 reference -- then fix it.

Check it with:  tritonlab check debug-rmsnorm
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


# TODO: this kernel has 4 bugs (semantic and numerical). Find them all; the host code below is correct.
@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_cols,
                    stride_xm, stride_xn, stride_w, stride_ym, eps,
                    BLOCK_N: tl.constexpr):
    # cost model: reads M·N + N, writes M·N elements
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols * stride_w, mask=mask, other=0.0)
    mean_sq = tl.sum(x * x, axis=0).to(tl.float32) / BLOCK_N
    inv_rms = tl.rsqrt(mean_sq) + eps
    y = x * inv_rms * w
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm(x, weight, eps=1e-6):
    assert x.ndim == 2 and weight.ndim == 1 and weight.shape[0] == x.shape[1]
    M, N = x.shape
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if y.numel() == 0:
        return y
    BLOCK_N = triton.next_power_of_2(N)
    num_warps = 4 if BLOCK_N <= 2048 else (8 if BLOCK_N <= 8192 else 16)
    rms_norm_kernel[(M,)](x, weight, y, N, x.stride(0), x.stride(1), weight.stride(0), y.stride(0), eps,
                          BLOCK_N=BLOCK_N, num_warps=num_warps)
    return y


if __name__ == "__main__":
    x = torch.randn(32, 64, device=DEVICE)  # a power-of-two width, contiguous, fp32: the easy case
    w = torch.randn(64, device=DEVICE)
    ref = x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
    print("easy case, max abs error:", (rms_norm(x, w).double() - ref).abs().max().item())
