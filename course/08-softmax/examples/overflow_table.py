"""Where exp overflows and underflows in fp32, fp16 and bf16 -- and why softmax subtracts the maximum.

Run:  TRITON_INTERPRET=1 python examples/overflow_table.py
"""

import math

import torch
import triton  # noqa: F401

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def main():
    print(f"{'dtype':>9} {'largest':>12} {'exp overflows above':>20} {'smallest normal':>16} {'exp -> 0 below':>15}")
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        fi = torch.finfo(dtype)
        # exp underflows to exactly zero once the result drops below half the smallest subnormal
        smallest_sub = fi.tiny * fi.eps
        print(f"{str(dtype)[6:]:>9} {fi.max:12.4e} {math.log(fi.max):20.2f} {fi.tiny:16.3e} "
              f"{math.log(smallest_sub / 2):15.2f}")

    print("\nNaive softmax of [1e4, 0, -5] in each dtype, versus max-subtracted:")
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        v = torch.tensor([1e4, 0.0, -5.0], device=DEVICE).to(dtype)
        e = torch.exp(v)
        naive = e / e.sum()
        e2 = torch.exp(v - v.max())
        stable = e2 / e2.sum()
        print(f"{str(dtype)[6:]:>9}  naive {naive.float().tolist()}   stable {stable.float().tolist()}")

    print("\nThe identity softmax(x) = softmax(x - c), checked in float64 for several c:")
    x = torch.tensor([3.0, 1.0, -2.0, 0.5], dtype=torch.float64)
    ref = torch.softmax(x, dim=0)
    for c in (0.0, 3.0, -100.0, 700.0):
        e = torch.exp(x - c)
        print(f"  c = {c:7.1f}: max |difference| = {(e / e.sum() - ref).abs().max().item():.2e}")


if __name__ == "__main__":
    main()
