"""Why a benchmark needs warm-up and a median -- shown with the CPU alone.

Run:  TRITON_INTERPRET=1 python examples/median_vs_mean.py

The "work" is a small PyTorch matrix product on DEVICE. A few calls are deliberately disturbed by a sleep,
standing in for what disturbs real measurements (a preempted process, a clock dip). The numbers printed are
CPU timings of this machine: they illustrate the statistics, not GPU speed.
"""

import statistics
import time

import torch
import triton  # noqa: F401

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed_calls(fn, n):
    times = []
    for _ in range(n):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def main():
    a = torch.randn(256, 256, device=DEVICE)
    b = torch.randn(256, 256, device=DEVICE)
    calls = 0

    def work():
        nonlocal calls
        calls += 1
        if calls % 10 == 3:  # every tenth call is disturbed
            time.sleep(0.01)
        return a @ b

    cold = timed_calls(work, 1)[0]
    warm = timed_calls(work, 40)
    print(f"first (cold) call:  {cold:8.3f} ms")
    print(f"mean of 40 calls:   {statistics.mean(warm):8.3f} ms   <- pulled up by the disturbed calls")
    print(f"median of 40 calls: {statistics.median(warm):8.3f} ms   <- robust")
    q = statistics.quantiles(warm, n=10)
    print(f"p20 .. p80:         {q[1]:8.3f} .. {q[7]:.3f} ms")
    print(f"slowest call:       {max(warm):8.3f} ms")


if __name__ == "__main__":
    main()
