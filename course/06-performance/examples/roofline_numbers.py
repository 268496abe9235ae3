"""Arithmetic intensity and roofline bounds, computed from formulas.

Run:  TRITON_INTERPRET=1 python examples/roofline_numbers.py
The peaks are NVIDIA H200 SXM datasheet figures, not measurements.
"""

import torch
import triton  # noqa: F401  (imported so the example runs in the same environment as the lesson)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

PEAK_FLOPS = 990e12  # dense bf16 tensor-core FLOP/s (datasheet)
PEAK_BW = 4.8e12  # HBM3e bytes/s (datasheet)
RIDGE = PEAK_FLOPS / PEAK_BW


def elementwise(flops_per_elem, n_inputs, n_outputs, size):
    """A pointwise kernel touching each element once: intensity does not depend on n."""
    return flops_per_elem / ((n_inputs + n_outputs) * size)


def softmax(size):
    # max, subtract, exp, sum, divide: about 5 FLOPs; reads M·N, writes M·N
    return 5 / (2 * size)


def matmul(m, n, k, size):
    # 2·M·N·K FLOPs; compulsory traffic (M·K + K·N + M·N)·size bytes
    return 2 * m * n * k / (size * (m * k + k * n + m * n))


def report(name, intensity):
    attainable = min(PEAK_FLOPS, intensity * PEAK_BW)
    bound = "memory" if intensity < RIDGE else "compute"
    # for a memory-bound kernel the meaningful ceiling is bandwidth, so print both views
    print(f"{name:40s} {intensity:10.3f} FLOP/B  ≤ {attainable / 1e12:8.2f} TFLOP/s  ({bound}-bound)")


def main():
    print(f"device: {DEVICE}; ridge point of the H200 (datasheet): {RIDGE:.1f} FLOP/byte\n")
    report("vector add fp32 (1 FLOP, 2 in, 1 out)", elementwise(1, 2, 1, 4))
    report("axpy fp32 (2 FLOPs, 2 in, 1 out)", elementwise(2, 2, 1, 4))
    report("GELU bf16 (~20 FLOPs, 1 in, 1 out)", elementwise(20, 1, 1, 2))
    report("softmax fp32", softmax(4))
    report("softmax bf16", softmax(2))
    for m in (1, 16, 128, 1024, 4096):
        report(f"GEMM bf16 M={m}, N=K=4096", matmul(m, 4096, 4096, 2))
    # the token count at which a 4096x4096 bf16 linear layer crosses the ridge
    m = 1
    while matmul(m, 4096, 4096, 2) < RIDGE:
        m += 1
    print(f"\nA 4096x4096 bf16 linear layer becomes compute-bound at about M = {m} rows (tokens).")


if __name__ == "__main__":
    main()
