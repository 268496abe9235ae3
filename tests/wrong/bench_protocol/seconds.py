"""Wrong: returns seconds, not milliseconds."""

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
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
