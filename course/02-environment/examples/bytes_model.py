"""Cost models on paper: bytes moved by eager PyTorch versus one fused kernel, and the roofline bound.

Nothing here is measured; every number follows from counting elements and from the formula
attainable FLOP/s = min(P, intensity * B) for an illustrative GPU.
"""

import torch
import triton  # noqa: F401  (imported so the file runs in the same environment as the kernels)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

P = 50e12  # peak FLOP/s of an illustrative GPU (round number, not a product)
B = 2e12  # memory bandwidth in bytes/s of the same illustrative GPU

# name, eager kernels as (tensors read, tensors written), tensors the fused kernel reads, FLOP per element
CHAINS = [
    ("y = x * 2 + 1", [(1, 1), (1, 1)], 1, 2),
    ("y = relu(x * w + b)     (w, b scalars)", [(1, 1), (1, 1), (1, 1)], 1, 3),
    ("y = (x - m) * s * g + b (scalars)", [(1, 1)] * 4, 1, 4),
    ("y = x + a * z           (x, z tensors)", [(1, 1), (2, 1)], 2, 2),
]


def main() -> None:
    n = 2**24
    for dtype in (torch.float32, torch.bfloat16):
        size = torch.empty(0, dtype=dtype).element_size()
        print(f"\n{n:,} elements of {dtype} ({size} bytes each)")
        print(
            f"{'chain':<40} {'kernels':>7} {'eager MiB':>10} {'fused MiB':>10} {'FLOP/byte':>10} {'% of peak':>10}"
        )
        for name, kernels, fused_reads, flops in CHAINS:
            eager = sum(r + w for r, w in kernels) * n * size  # every intermediate goes to memory and back
            fused = (fused_reads + 1) * n * size  # read each input once, write y once
            intensity = flops * n / fused
            frac = min(P, intensity * B) / P
            print(
                f"{name:<40} {len(kernels):>7} {eager / 2**20:>10.0f} {fused / 2**20:>10.0f} "
                f"{intensity:>10.2f} {100 * frac:>9.1f}%"
            )
    print(
        f"\nIllustrative GPU: P = {P:.0e} FLOP/s, B = {B:.0e} B/s, balance point P/B = {P / B:.0f} FLOP/byte."
    )
    print("Every chain above sits far below the balance point: memory-bound, so time ~ bytes / B.")


if __name__ == "__main__":
    main()
