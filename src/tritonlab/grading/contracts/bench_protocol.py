"""bench-protocol (lesson 6): `median_time_ms(fn, warmup, rep)` calls fn `warmup` times untimed, times `rep`
separate calls (synchronising the device around each timing when a GPU is present) and returns the median
in milliseconds.

Graded with instrumented functions whose durations are known (sleeps), on every backend:
- call counts: exactly warmup + rep calls;
- slow warm-up calls, fast timed calls: warm-up calls must not be timed;
- one outlier among the timed calls, durations chosen so that median, mean, min and max all differ;
- a simulated asynchronous device: `torch.cuda.is_available()` answers True and fn only queues work, which
  `torch.cuda.synchronize()` waits for — without a synchronize after fn the timing is ~0, without one before
  the clock starts the first timed call pays for the queued warm-up work.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from tritonlab.grading.contracts import Case
from tritonlab.grading.contracts.compare import exception_failure
from tritonlab.models import Failure

FUNCTION = "median_time_ms"
REPLAY = False  # calls the learner's function (or kernel) many times: not replayed yet (docs/grader.md)

SLACK_MS = 4.0  # scheduling noise a sleep may add on a busy machine


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    timed = [2.0, 3.0, 4.0, 5.0, 150.0]
    order = [float(v) for v in rng.permutation(timed)]
    quick = float(rng.choice([2.0, 3.0]))
    return [
        Case("counts: warmup=3, rep=7", extra={"warmup": 3, "rep": 7, "durations": [1.0] * 10}),
        Case("no warm-up: warmup=0, rep=5", extra={"warmup": 0, "rep": 5, "durations": [3.0] * 5}),
        Case(
            "slow warm-up calls are not timed",
            extra={"warmup": 5, "rep": 3, "durations": [30.0] * 5 + [quick] * 3},
        ),
        Case(
            "one outlier: median, not mean/min/max", extra={"warmup": 1, "rep": 5, "durations": [1.0] + order}
        ),
        Case(
            "asynchronous device: synchronize after fn",
            extra={"warmup": 2, "rep": 5, "async": True, "durations": [4.0] * 7},
        ),
        Case(
            "asynchronous device: synchronize before the clock",
            extra={"warmup": 4, "rep": 1, "async": True, "durations": [6.0] * 5},
        ),
    ]


class _FakeDevice:
    """A device whose work runs 'in the background': fn queues it, synchronize() waits for it."""

    def __init__(self) -> None:
        import time

        self.time = time
        self.done_at = 0.0
        self.syncs = 0

    def queue(self, ms: float) -> None:
        now = self.time.perf_counter()
        self.done_at = max(self.done_at, now) + ms / 1e3

    def synchronize(self, *args: Any, **kwargs: Any) -> None:
        self.syncs += 1
        wait = self.done_at - self.time.perf_counter()
        if wait > 0:
            self.time.sleep(wait)


def run_case(fn: Any, case_spec: dict, tools: Any) -> dict:
    import time

    import torch

    extra = case_spec["extra"]
    durations = list(extra["durations"])
    calls = {"n": 0}
    device = _FakeDevice() if extra.get("async") else None

    def work() -> None:
        ms = durations[min(calls["n"], len(durations) - 1)]
        calls["n"] += 1
        if device is not None:
            device.queue(ms)
        else:
            time.sleep(ms / 1e3)

    saved = (torch.cuda.is_available, torch.cuda.synchronize)
    if device is not None:
        torch.cuda.is_available = lambda: True  # type: ignore[assignment]
        torch.cuda.synchronize = device.synchronize  # type: ignore[assignment]
    try:
        value = fn(work, extra["warmup"], extra["rep"])
    finally:
        torch.cuda.is_available, torch.cuda.synchronize = saved  # type: ignore[assignment]
    number = None
    try:
        number = float(value)
    except (TypeError, ValueError):
        pass
    return {
        "json": {
            "value": number,
            "type": type(value).__name__,
            "calls": calls["n"],
            "syncs": device.syncs if device else None,
        }
    }


def check(case: Case, result: dict) -> list[Failure]:
    exc = exception_failure(case, result)
    if exc is not None:
        return [exc]
    data = result.get("data") or {}
    extra = case.extra
    warmup, rep, durations = extra["warmup"], extra["rep"], extra["durations"]
    name = case.name
    calls = data.get("calls", 0)
    if calls != warmup + rep:
        return [
            Failure(
                name,
                "wrong-result",
                f"fn was called {calls} times with warmup={warmup}, rep={rep}; "
                f"expected exactly {warmup + rep}",
                "call fn `warmup` times untimed, then `rep` times timed — no extra calls",
            )
        ]
    value = data.get("value")
    if value is None or not np.isfinite(value):
        return [
            Failure(
                name,
                "wrong-result",
                f"returned {data.get('type')} {value!r}, expected a number of milliseconds",
                "return the median of the rep timings, as a float in ms",
            )
        ]
    timed = durations[warmup : warmup + rep]
    median = statistics.median(timed)
    low, high = 0.95 * median, 1.25 * median + SLACK_MS
    if low <= value <= high:
        return []
    return [
        Failure(
            name,
            "wrong-result",
            f"returned {value:.4g} ms; the timed calls took {fmt_list(timed)} ms, "
            f"so the median is about {median:g} ms (accepted {low:.3g}–{high:.3g})",
            diagnose(value, timed, durations[:warmup], median, bool(extra.get("async"))),
        )
    ]


def fmt_list(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def diagnose(value: float, timed: list[float], warm: list[float], median: float, asynchronous: bool) -> str:
    if 0.95 * median / 1e3 <= value <= (1.25 * median + 4) / 1e3:
        return "that is the median in seconds: multiply the perf_counter difference by 1000"
    if asynchronous and value < 0.5 * median:
        return (
            "the timing ended before the device finished: launches are asynchronous, so call "
            "torch.cuda.synchronize() (when a GPU is available) after fn() and before reading the clock"
        )
    if asynchronous and warm and value >= median + 0.5 * sum(warm):
        return (
            "the first timed call paid for the queued warm-up work: synchronize before starting the clock, "
            "too"
        )
    mean = sum(timed) / len(timed)
    if abs(value - mean) <= 0.1 * mean + 2:
        return "that is the mean: one slow outlier drags it up — return statistics.median(times)"
    if abs(value - sum(timed)) <= 0.1 * sum(timed) + 2:
        return "that is the total of the timed calls: time each call separately and take the median"
    if value <= min(timed) + 0.5:
        return (
            "that looks like the minimum (or timing that misses the call): return the median of the timings"
        )
    if warm and value >= 0.5 * min(warm):
        return "the warm-up calls were timed too: time only the `rep` calls after the warm-up loop"
    return "time each of the rep calls separately with time.perf_counter() and return statistics.median"
