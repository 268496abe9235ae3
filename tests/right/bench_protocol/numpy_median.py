"""Right: synchronise once after the warm-up and around each call; numpy median; perf_counter_ns."""

import time

import numpy as np
import torch


def median_time_ms(fn, warmup, rep):
    gpu = torch.cuda.is_available()
    for _ in range(warmup):
        fn()
    if gpu:
        torch.cuda.synchronize()
    samples = np.empty(rep)
    for i in range(rep):
        start = time.perf_counter_ns()
        fn()
        if gpu:
            torch.cuda.synchronize()
        samples[i] = (time.perf_counter_ns() - start) / 1e6
    return float(np.median(samples))
