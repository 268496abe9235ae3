"""Exercise matmul-bias: act(a @ b + bias) in ONE kernel launch.

matmul_bias(a, b, bias, activation=None) -> a new contiguous (M, N) tensor with a's dtype.
a: (M, K), b: (K, N), bias: (N,) -- any strides; fp32, fp16 or bf16.
activation: None, "relu", or "gelu" (exact erf form, like torch.nn.functional.gelu).

Check it with:  tritonlab check matmul-bias
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
ACTIVATIONS = {None: 0, "relu": 1, "gelu": 2}


@triton.jit
def gelu_erf(x):
    # TODO: exact GELU: 0.5 * x * (1 + erf(x / sqrt(2))), with tl.math.erf (x must be fp32).
    return x


@triton.jit
def matmul_bias_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_bias, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       ACTIVATION: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr):
    # cost model (compulsory): reads M·K + K·N + N, writes M·N elements; FLOPs ≈ 2·M·N·K
    # TODO: which tile is this program's? Read its coordinates along the two axes of the grid.
    # TODO: the masked, stride-aware K loop of the matmul exercise, accumulating in fp32.
    # TODO: epilogue -- load this tile's BLOCK_N bias values (1-D, masked), add them to every row,
    #       then ACTIVATION == 1: ReLU, ACTIVATION == 2: gelu_erf, all in fp32.
    # TODO: store the tile converted to c's dtype, masked on M and N.
    pass


def matmul_bias(a, b, bias, activation=None):
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {list(ACTIVATIONS)}, got {activation!r}")
    assert a.shape[1] == b.shape[0] and bias.shape[0] == b.shape[1] and a.dtype == b.dtype
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 64
    precision = "ieee" if a.dtype == torch.float32 else "tf32"
    upcast = a.dtype == torch.bfloat16 and not a.is_cuda
    # TODO: the 2-D grid: how many programs along each axis, so that every BLOCK_M × BLOCK_N tile of the
    #       output c gets exactly one program, in the axis order your kernel reads with tl.program_id.
    grid = (1, 1)
    matmul_bias_kernel[grid](a, b, bias, c, M, N, K,
                             a.stride(0), a.stride(1), b.stride(0), b.stride(1), bias.stride(0),
                             c.stride(0), c.stride(1),
                             BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                             ACTIVATION=ACTIVATIONS[activation], UPCAST=upcast, PRECISION=precision)
    return c


if __name__ == "__main__":
    import torch.nn.functional as F

    a = torch.randn(50, 70, device=DEVICE)
    b = torch.randn(70, 33, device=DEVICE)
    bias = torch.randn(33, device=DEVICE)
    out = matmul_bias(a, b, bias, "gelu")
    print("matches:", torch.allclose(out, F.gelu(a @ b + bias), atol=1e-4))
