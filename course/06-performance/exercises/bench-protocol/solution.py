"""Reference solution for bench-protocol."""

import statistics
import time

import torch


def _sync():
    # Kernel launches return before the GPU has finished; block until it has.
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def median_time_ms(fn, warmup=10, rep=50):
    """Median wall-clock time of one call of fn, in milliseconds."""
    if rep < 1:
        raise ValueError("rep must be at least 1")
    for _ in range(warmup):
        fn()
    times_ms = []
    for _ in range(rep):
        _sync()  # do not bill earlier, still-running work to this call
        start = time.perf_counter()
        fn()
        _sync()  # the call is over only when the device is idle again
        times_ms.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times_ms)


if __name__ == "__main__":
    x = torch.randn(512, 512)
    print(f"512x512 matmul on the CPU: {median_time_ms(lambda: x @ x, warmup=3, rep=20):.3f} ms (median)")
