"""@triton.autotune on the interpreter: configs, pruning, keys and the cache -- with a CPU timer.

Run:  TRITON_INTERPRET=1 python examples/autotune_interpreter.py

The CPU timer measures NumPy, so the *choice* made here means nothing for a GPU; the mechanics are the same.
On a GPU, do_bench=None selects Triton's default timer.
"""

import statistics
import time

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TIMED = []  # (key, config) pairs the timer was asked to measure


def cpu_do_bench(fn, quantiles=None):
    fn()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    if quantiles is None:
        return statistics.median(times)
    return [times[min(len(times) - 1, int(q * len(times)))] for q in quantiles]


def timer(fn, quantiles=None):
    TIMED.append(1)
    return cpu_do_bench(fn, quantiles)


def prune(configs, named_args, **kwargs):
    n_cols = named_args["n_cols"]
    # rows never need a block longer than next_power_of_2(n_cols); keep at least one config
    kept = [c for c in configs if c.kwargs["BLOCK_N"] >= triton.next_power_of_2(n_cols)] or configs[-1:]
    # and within those, the smallest sufficient block is enough to try alongside one bigger one
    return kept[:2]


@triton.autotune(
    configs=[triton.Config({"BLOCK_N": b}, num_warps=w) for b, w in ((64, 1), (128, 2), (256, 4), (512, 4), (1024, 8))],
    key=["n_cols"],
    prune_configs_by={"early_config_prune": prune},
    do_bench=None if torch.cuda.is_available() else timer,
)
@triton.jit
def row_scale_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # each row divided by its maximum absolute value; reads M·N, writes M·N elements
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    m = tl.max(tl.abs(x), axis=0)
    tl.store(y_ptr + row * stride_y + cols, (x / m).to(y_ptr.dtype.element_ty), mask=mask)


def row_scale(x):
    y = torch.empty_like(x)
    row_scale_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0))
    return y


def main():
    for n_cols, dtype in ((100, torch.float32), (100, torch.float32), (300, torch.float32), (100, torch.float16)):
        before = len(TIMED)
        x = torch.randn(8, n_cols, device=DEVICE, dtype=dtype) + 0.1
        y = row_scale(x)
        ref = x.double() / x.double().abs().amax(dim=1, keepdim=True)
        torch.testing.assert_close(y.double(), ref, atol=1e-3, rtol=1e-3)
        print(f"n_cols={n_cols:4d} {str(dtype):14s} timed {len(TIMED) - before} configs -> "
              f"BLOCK_N={row_scale_kernel.best_config.kwargs['BLOCK_N']}")
    print(f"cached tuning results: {len(row_scale_kernel.cache)} (the key includes the dtype)")


if __name__ == "__main__":
    main()
