"""Wrong: returns a trimmed mean (the fastest and slowest timings dropped) instead of the median. With one
outlier among symmetric durations the two agree; with a skewed spread they do not."""

import statistics
import time

import torch


def _sync():
    if torch.cuda.is_available():
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
    times.sort()
    return statistics.mean(times[1:-1] or times)  # drop the fastest and the slowest (when there are 3+)
