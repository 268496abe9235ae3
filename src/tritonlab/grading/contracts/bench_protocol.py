"""bench-protocol (lesson 6): `median_time_ms(fn, warmup, rep)` calls fn `warmup` times untimed, times `rep`
separate calls (synchronising the device around each timing when a GPU is present) and returns the median
in milliseconds.

Graded with instrumented functions whose durations are known, on every backend. The durations are simulated
on a fake clock (exact, no sleeping) unless the learner's module holds a real clock function of its own, in
which case fn really sleeps and SLACK_MS absorbs scheduling noise:
- call counts: exactly warmup + rep calls;
- slow warm-up calls, fast timed calls: warm-up calls must not be timed;
- one outlier among the timed calls, durations chosen so that median, mean, min and max all differ;
- skewed durations (a long tail on one side) where a trimmed mean, dropping the extremes, is not the median;
- a simulated asynchronous device: `torch.cuda.is_available()` answers True and fn only queues work, which
  `torch.cuda.synchronize()` waits for — without a synchronize after fn the timing is ~0, without one before
  the clock starts the first timed call pays for the queued warm-up work.

This exercise launches no kernel: its host code *is* the work, so there is no launch to replay. Its analogue
of the replay is the clock trace: on the fake clock every reading the learner takes is logged with the start
and end of every call of fn, and the parent recomputes the answer from that trace — for each timed call, the
last reading before it started and the first after it ended — and requires the returned value to be their
median. A value computed without reading the clock around the calls (e.g. from the durations the grader keeps
in fn's closure) fails as `host-computed`.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import Case
from tritonlab.grading.contracts.compare import exception_failure
from tritonlab.models import Failure

FUNCTION = "median_time_ms"
REPLAY = False  # no kernel launches to replay: the clock trace below plays that part (docs/grader.md)

SLACK_MS = 4.0  # scheduling noise a sleep may add on a busy machine


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    timed = [2.0, 3.0, 4.0, 5.0, 150.0]
    order = [float(v) for v in rng.permutation(timed)]
    quick = float(rng.choice([2.0, 3.0]))
    skewed = [1.0, 2.0, 2.5, 9.0, 10.0, 11.0, 40.0]  # median 9; mean of the middle five 6.9
    low_tail = [0.5, 1.0, 1.5, 12.0, 12.5, 13.0, 13.5]  # median 12; mean of the middle five 8.0
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
        # skewed durations (a long tail below the median): a trimmed mean (dropping the extremes) lands well
        # below the median, where the symmetric outlier case above cannot tell them apart
        Case(
            "asymmetric durations: median, not a trimmed mean",
            extra={"warmup": 1, "rep": 7, "durations": [1.0] + [float(v) for v in rng.permutation(skewed)]},
        ),
        Case(
            "asymmetric durations, low tail: median, not a trimmed mean",
            extra={"warmup": 1, "rep": 7, "durations": [1.0] + [float(v) for v in rng.permutation(low_tail)]},
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


CLOCKS = ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns")


class _Clock:
    """The time the learner's code reads. Fake where it can be: the `time` module's clocks (and
    timeit.default_timer) run ahead by the simulated work instead of the child sleeping, so the grading is
    exact on a busy machine. Real sleeps when the learner holds a clock of its own (`from time import
    perf_counter` binds the real function before we could replace it)."""

    def __init__(self, fake: bool) -> None:
        import time

        self.time = time
        self.fake = fake
        self.ahead = 0.0  # seconds of simulated work so far
        self.real = {name: getattr(time, name) for name in CLOCKS}
        self.trace: list[tuple[str, float]] = []  # ("read", seconds) / ("start"|"end", call number)

    def now(self) -> float:
        return self.real["perf_counter"]() + self.ahead

    def spend(self, seconds: float) -> None:
        if seconds <= 0:
            return
        if self.fake:
            self.ahead += seconds
        else:
            self.time.sleep(seconds)

    def install(self) -> dict[str, Any]:
        import timeit

        saved = {name: getattr(self.time, name) for name in CLOCKS} | {"timeit": timeit.default_timer}
        if self.fake:
            for name in CLOCKS:
                real = self.real[name]
                if name.endswith("_ns"):
                    setattr(
                        self.time, name, lambda real=real: self._read(real() + int(self.ahead * 1e9), 1e-9)
                    )
                else:
                    setattr(self.time, name, lambda real=real: self._read(real() + self.ahead, 1.0))
            timeit.default_timer = self.time.perf_counter
        return saved

    def _read(self, value: Any, unit: float) -> Any:
        if len(self.trace) < MAX_TRACE:
            self.trace.append(("read", value * unit))
        return value

    def restore(self, saved: dict[str, Any]) -> None:
        import timeit

        for name in CLOCKS:
            setattr(self.time, name, saved[name])
        timeit.default_timer = saved["timeit"]


def holds_a_clock(fn: Any) -> bool:
    """Does the learner's module (or fn's closure) keep a reference to a real clock function?"""
    import time
    import timeit

    real = {id(getattr(time, name)) for name in CLOCKS} | {id(timeit.default_timer)}
    found = list(getattr(fn, "__globals__", {}).values())
    found += [c.cell_contents for c in (getattr(fn, "__closure__", None) or ()) if _filled(c)]
    return any(id(v) in real for v in found)


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


class _FakeDevice:
    """A device whose work runs 'in the background': fn queues it, synchronize() waits for it."""

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock
        self.done_at = 0.0
        self.syncs = 0

    def queue(self, ms: float) -> None:
        self.done_at = max(self.done_at, self.clock.now()) + ms / 1e3

    def synchronize(self, *args: Any, **kwargs: Any) -> None:
        self.syncs += 1
        self.clock.spend(self.done_at - self.clock.now())


def run_case(fn: Any, case_spec: dict, tools: Any) -> dict:
    import torch

    extra = case_spec["extra"]
    durations = list(extra["durations"])
    calls = {"n": 0}
    clock = _Clock(fake=not holds_a_clock(fn))
    device = _FakeDevice(clock) if extra.get("async") else None

    def work() -> None:
        ms = durations[min(calls["n"], len(durations) - 1)]
        clock.trace.append(("start", calls["n"]))
        calls["n"] += 1
        if device is not None:
            device.queue(ms)
        else:
            clock.spend(ms / 1e3)
        clock.trace.append(("end", calls["n"] - 1))

    saved = (torch.cuda.is_available, torch.cuda.synchronize)
    if device is not None:
        torch.cuda.is_available = lambda: True  # type: ignore[assignment]
        torch.cuda.synchronize = device.synchronize  # type: ignore[assignment]
    clocks = clock.install()
    try:
        value = fn(work, extra["warmup"], extra["rep"])
    finally:
        clock.restore(clocks)
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
            "fake_clock": clock.fake,
            "measured": measured_from_trace(clock.trace, extra["warmup"], extra["rep"])
            if clock.fake
            else None,
        }
    }


MAX_TRACE = 10_000


def measured_from_trace(trace: list[tuple[str, float]], warmup: int, rep: int) -> list[float | None]:
    """What the learner's clock readings say each timed call took (ms): the last reading before the call
    started to the first reading after it ended; None where a call has no reading on one side."""
    out: list[float | None] = []
    last_read: float | None = None
    pending: dict[int, float | None] = {}
    ended: list[int] = []
    for kind, value in trace:
        if kind == "read":
            for k in ended:
                before = pending.pop(k, None)
                out.append(None if before is None else (value - before) * 1e3)
            ended = []
            last_read = value
        elif kind == "start" and warmup <= int(value) < warmup + rep:
            pending[int(value)] = last_read
        elif kind == "end" and int(value) in pending:
            ended.append(int(value))
    out += [None] * (rep - len(out))
    return out[:rep]


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
                i18n.t(
                    "grader.bench_protocol_fn_was_called_calls",
                    calls=calls,
                    warmup=warmup,
                    rep=rep,
                    warmup_plus=warmup + rep,
                ),
                i18n.t("grader.bench_protocol_call_fn_warmup_times"),
            )
        ]
    value = data.get("value")
    if value is None or not np.isfinite(value):
        return [
            Failure(
                name,
                "wrong-result",
                i18n.t(
                    "grader.bench_protocol_returned_type_value_expected",
                    type=data.get("type"),
                    value=repr(value),
                ),
                i18n.t("grader.bench_protocol_return_median_rep_timings"),
            )
        ]
    timed = durations[warmup : warmup + rep]
    median = statistics.median(timed)
    low, high = 0.95 * median, 1.25 * median + SLACK_MS
    if low <= value <= high:
        return from_the_clock(name, value, data.get("measured"))
    return [
        Failure(
            name,
            "wrong-result",
            i18n.t(
                "grader.bench_protocol_returned_value_ms_timed",
                value=format(value, ".4g"),
                fmt_list=fmt_list(timed),
                median=format(median, "g"),
                low=format(low, ".3g"),
                high=format(high, ".3g"),
            ),
            diagnose(value, timed, durations[:warmup], median, bool(extra.get("async")), data.get("syncs")),
        )
    ]


def from_the_clock(name: str, value: float, measured: Any) -> list[Failure]:
    """The fake clock's trace, replayed: the value must be the median of what the learner's own clock readings
    around the timed calls measured ([] when the clock was real, so the readings were not observed)."""
    if measured is None:
        return []
    readings = measured if isinstance(measured, list) else []
    if readings and all(isinstance(m, (int, float)) for m in readings):
        median = statistics.median(float(m) for m in readings)
        if abs(value - median) <= 0.05 * abs(median) + 0.5:
            return []
        why = i18n.t(
            "grader.bench_protocol_clock_readings_around_timed",
            median=format(median, ".4g"),
            value=format(value, ".4g"),
        )
    else:
        why = i18n.t("grader.bench_protocol_function_did_not_read")
    return [
        Failure(
            name,
            "host-computed",
            i18n.t("grader.bench_protocol_value_you_returned_not", why=why),
            i18n.t("grader.bench_protocol_time_each_call_with"),
        )
    ]


def fmt_list(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def diagnose(
    value: float,
    timed: list[float],
    warm: list[float],
    median: float,
    asynchronous: bool,
    syncs: int | None = None,
) -> str:
    """The likely cause, from the evidence: on the simulated asynchronous device, how often the learner's code
    synchronised (`syncs`) comes first — a timing of ~0 without a synchronize is not a unit mistake."""
    unsynced = asynchronous and syncs is not None and syncs < len(timed)
    seconds = 0.95 * median / 1e3 <= value <= (1.25 * median + 4) / 1e3
    if seconds and not unsynced:
        return i18n.t("grader.bench_protocol_that_median_seconds_multiply")
    if asynchronous and value < 0.5 * median:
        return i18n.t("grader.bench_protocol_timing_ended_before_device")
    if asynchronous and warm and value >= median + 0.5 * sum(warm):
        return i18n.t("grader.bench_protocol_first_timed_call_paid")
    mean = sum(timed) / len(timed)
    if abs(value - mean) <= 0.1 * mean + 2:
        return i18n.t("grader.bench_protocol_that_mean_one_slow")
    ordered = sorted(timed)
    trimmed = ordered[1:-1]
    if len(trimmed) >= 3 and abs(value - sum(trimmed) / len(trimmed)) <= 0.02 * median + 0.05:
        return i18n.t("grader.bench_protocol_that_trimmed_mean_fastest")
    if abs(value - sum(timed)) <= 0.1 * sum(timed) + 2:
        return i18n.t("grader.bench_protocol_that_total_timed_calls")
    if value <= min(timed) + 0.5:
        return i18n.t("grader.bench_protocol_that_looks_like_minimum")
    if warm and value >= 0.5 * min(warm):
        return i18n.t("grader.bench_protocol_warm_up_calls_were")
    return i18n.t("grader.bench_protocol_time_each_rep_calls")
