"""Reference solution for debug-rmsnorm: y = x * rsqrt(mean(x^2, -1) + eps) * weight, row by row."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_cols,
                    stride_xm, stride_xn, stride_w, stride_ym, eps,
                    BLOCK_N: tl.constexpr):
    # cost model: reads M·N + N, writes M·N elements
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols * stride_w, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    inv_rms = tl.rsqrt(mean_sq + eps)
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
    x = torch.randn(64, 37, device=DEVICE, dtype=torch.bfloat16).t()  # 37 rows of 64, transposed layout
    w = torch.randn(64, device=DEVICE, dtype=torch.bfloat16)
    ref = x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
    print("max abs error:", (rms_norm(x, w).double() - ref).abs().max().item())
