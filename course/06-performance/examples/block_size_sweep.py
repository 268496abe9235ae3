"""Sweep BLOCK_SIZE x num_warps for a memory-bound kernel and report achieved bandwidth.

Run on a GPU:   python examples/block_size_sweep.py
On the interpreter (TRITON_INTERPRET=1) it checks every configuration for correctness on a small input,
then explains that timing needs a GPU and exits with status 0.
"""

import os
import sys

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BLOCKS = (256, 512, 1024, 2048, 4096)
WARPS = (1, 2, 4, 8)


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK_SIZE: tl.constexpr):
    # reads 2·n, writes n elements -> bytes = 3·n·size
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def axpy(alpha, x, y, block, warps):
    out = torch.empty_like(x)
    n = x.numel()
    axpy_kernel[(triton.cdiv(n, block),)](x, y, out, alpha, n, BLOCK_SIZE=block, num_warps=warps)
    return out


def check_all_configs():
    n = 5_003  # odd on purpose: every block size leaves a partial last block
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)
    for block in BLOCKS:
        for warps in WARPS:
            torch.testing.assert_close(axpy(0.5, x, y, block, warps), 0.5 * x + y)
    print(f"all {len(BLOCKS) * len(WARPS)} configurations are correct on n={n}")


def sweep(n=1 << 26, dtype=torch.float32):
    x = torch.randn(n, device=DEVICE, dtype=dtype)
    y = torch.randn(n, device=DEVICE, dtype=dtype)
    nbytes = 3 * n * x.element_size()
    props = torch.cuda.get_device_properties(0)
    print(f"{props.name}, torch {torch.__version__}, triton {triton.__version__}, {dtype}, n={n}")
    # reference point: what a device-to-device copy achieves (reads n, writes n elements)
    dst = torch.empty_like(x)
    copy_ms = triton.testing.do_bench(lambda: dst.copy_(x), warmup=25, rep=100, return_mode="median")
    print(f"torch copy: {2 * n * x.element_size() / (copy_ms * 1e-3) / 1e9:.0f} GB/s")
    print(f"{'BLOCK':>6} {'warps':>5} {'median ms':>10} {'p20':>8} {'p80':>8} {'GB/s':>8}")
    best = None
    for block in BLOCKS:
        for warps in WARPS:
            med, p20, p80 = triton.testing.do_bench(
                lambda: axpy(2.0, x, y, block, warps), warmup=25, rep=100, quantiles=[0.5, 0.2, 0.8]
            )
            gbps = nbytes / (med * 1e-3) / 1e9
            best = max(best or (0, 0, 0), (gbps, block, warps))
            print(f"{block:>6} {warps:>5} {med:>10.4f} {p20:>8.4f} {p80:>8.4f} {gbps:>8.0f}")
    print(f"best: BLOCK_SIZE={best[1]}, num_warps={best[2]} at {best[0]:.0f} GB/s")


def main():
    check_all_configs()
    if DEVICE != "cuda" or os.environ.get("TRITON_INTERPRET") == "1":
        print("Timing needs a GPU: on the interpreter kernels run with NumPy on the CPU, so a timing")
        print("would measure Python, not the GPU. Run this file on a machine with an NVIDIA GPU.")
        return 0
    sweep()
    return 0


if __name__ == "__main__":
    sys.exit(main())
