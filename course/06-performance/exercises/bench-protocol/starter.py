"""Exercise bench-protocol: the core of a trustworthy timer.

median_time_ms(fn, warmup, rep) must
  1. call fn() `warmup` times without timing it (compilation, caches, clocks settle);
  2. time `rep` separate calls of fn(), each with time.perf_counter(), synchronising the GPU
     (torch.cuda.synchronize(), only when a GPU is available) before every clock reading;
  3. return the median of the `rep` durations, in milliseconds.

Check it with:  tritonlab check bench-protocol
"""

import statistics  # noqa: F401  (you will want statistics.median)
import time  # noqa: F401

import torch


def _sync():
    # TODO: wait until all queued GPU work has finished, but only when a GPU is available.
    pass


def median_time_ms(fn, warmup=10, rep=50):
    # TODO: warm-up -- call fn() `warmup` times, untimed.

    times_ms = []
    # TODO: call fn() `rep` times; time each call separately with time.perf_counter(),
    #       calling _sync() right before each clock reading; append the duration in ms.

    # TODO: return the median of times_ms (not the mean).
    return float("nan")


if __name__ == "__main__":
    x = torch.randn(512, 512)
    print(f"512x512 matmul on the CPU: {median_time_ms(lambda: x @ x, warmup=3, rep=20):.3f} ms (median)")
