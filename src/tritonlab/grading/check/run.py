"""Step 3 of a check, `run`: the check child, started from the zygote in the run directory step 2 wrote, with
the run's limits (a GPU memory cap raised to what huge cases hold); the parent streams its output and waits.
What a child says its own cases took is kept as a diagnostic (`child_seconds`), never judged."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from tritonlab.grading import huge
from tritonlab.grading.contracts import Case
from tritonlab.runs import sandbox
from tritonlab.runs.collect import Run, RunResult
from tritonlab.runs.limits import Limits, default_limits


def run(
    zygote: sandbox.Zygote,
    run_dir: Path,
    limits: Limits,
    timings: dict,
    on_start: Callable[[Run], None] | None = None,
    on_output: Callable[[str], None] | None = None,
) -> RunResult:
    """Start the check child in `run_dir` and wait for it; `timings` (the verdict's) gets how long it ran."""
    mark = time.monotonic()
    handle = zygote.start(run_dir, limits)
    if on_start:
        on_start(handle)
    result = handle.wait(on_output)
    timings["check_run_s"] = time.monotonic() - mark
    usage(timings, "check", result)
    if result.timings:
        timings["check_run"] = result.timings
    return result


def usage(timings: dict, name: str, result: RunResult | None) -> None:
    """What a run's process tree used, as its worker reaped it: `{name}_cpu_s`, `{name}_faults` (page faults)
    and `{name}_switches` (involuntary context switches), each where the worker said."""
    if result is None:
        return
    for key, value in (("cpu_s", result.cpu_s), ("faults", result.faults), ("switches", result.switches)):
        if value is not None:
            timings[f"{name}_{key}"] = value


def run_limits(backend: str, timeout: float, cases: list[Case]) -> Limits:
    """A check's run limits: the defaults, with a GPU memory cap raised to what its huge cases need."""
    limits = default_limits(backend, timeout)
    need = huge.gpu_bytes_needed(cases)
    if limits.gpu_memory_bytes is not None and need > limits.gpu_memory_bytes:
        limits.gpu_memory_bytes = need
    return limits


def child_seconds(timings: dict, name: str, values: list) -> None:
    """What a child said its own cases took (diagnostics only, never judged: a learner's process wrote it):
    the sum, and the first one (which pays the kernel's compile), when they are plain numbers."""
    numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    numbers = [v for v in numbers if 0 <= v < 1e6]
    if numbers:
        timings[f"{name}_s"] = sum(numbers)
        timings[f"{name}_first_s"] = numbers[0]
