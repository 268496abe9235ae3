"""Bytes moved by the element-wise passes around the GEMMs of a transformer MLP, unfused versus fused.

Run:  TRITON_INTERPRET=1 python examples/fusion_bytes.py

Pure arithmetic from formulas: the times are lower bounds from H200 datasheet peaks, not measurements.
"""

import torch
import triton  # noqa: F401

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
PEAK_FLOPS = 990e12  # dense bf16, datasheet
PEAK_BW = 4.8e12  # HBM3e, datasheet


def gemm(m, n, k, size):
    return 2 * m * n * k, (m * k + k * n + m * n) * size


def main(tokens=2048, hidden=4096, inter=11008, size=2):
    M = tokens
    rows = []
    # SwiGLU MLP: gate = x @ Wg, up = x @ Wu, h = silu(gate) * up, y = h @ Wd, out = y + residual
    for name, (n, k) in {"gate proj": (inter, hidden), "up proj": (inter, hidden), "down proj": (hidden, inter)}.items():
        flops, nbytes = gemm(M, n, k, size)
        rows.append((name, flops, nbytes))
    # unfused element-wise kernels, each reading its inputs and writing its output once
    silu = 2 * M * inter * size  # read gate, write silu(gate)
    mul = 3 * M * inter * size  # read silu(gate) and up, write h
    residual = 3 * M * hidden * size  # read y and residual, write out
    gemm_flops = sum(r[1] for r in rows)
    gemm_bytes = sum(r[2] for r in rows)
    print(f"MLP of {tokens} tokens, hidden {hidden}, intermediate {inter}, {8 * size}-bit values")
    for name, flops, nbytes in rows:
        print(f"  {name:10s} {flops / 1e9:8.1f} GFLOP  {nbytes / 1e6:7.1f} MB")
    print(f"  {'silu':10s} {'':8s}        {silu / 1e6:7.1f} MB")
    print(f"  {'multiply':10s} {'':8s}        {mul / 1e6:7.1f} MB")
    print(f"  {'residual':10s} {'':8s}        {residual / 1e6:7.1f} MB")
    extra = silu + mul + residual
    t_gemm = gemm_flops / PEAK_FLOPS
    print(f"\nGEMMs: {gemm_flops / 1e12:.2f} TFLOP -> at least {t_gemm * 1e6:.0f} µs at the datasheet peak")
    print(f"unfused element-wise passes: {extra / 1e6:.0f} MB -> at least {extra / PEAK_BW * 1e6:.0f} µs "
          f"({100 * extra / PEAK_BW / t_gemm:.0f} % on top), in 3 extra launches")
    # fused: silu(gate) * up in the epilogue of a combined gate/up GEMM, residual in the down GEMM's epilogue
    fused_extra = M * hidden * size  # only the residual read remains
    print(f"fused epilogues: {fused_extra / 1e6:.0f} MB extra (the residual must still be read once)")


if __name__ == "__main__":
    main()
