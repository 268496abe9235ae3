"""Wrong: synchronises unconditionally: torch.cuda.synchronize() fails where there is no GPU."""

import statistics
import time

import torch


def _sync():
    torch.cuda.synchronize()


def median_time_ms(fn, warmup=10, rep=50):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(rep):
        _sync()
        t0 = time.perf_counter()
        fn()
        _sync()
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)
