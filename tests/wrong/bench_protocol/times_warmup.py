"""Wrong: the warm-up calls are timed too (and the median taken over all of them)."""

import statistics
import time

import torch


def _sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def median_time_ms(fn, warmup=10, rep=50):
    times = []
    for _ in range(warmup + rep):
        _sync()
        t0 = time.perf_counter()
        fn()
        _sync()
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)
