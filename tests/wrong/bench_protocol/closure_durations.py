"""Cheat: calls fn warmup + rep times as asked, but reads the durations the grader keeps in fn's closure and
returns their median, never timing anything. The clock trace (no readings around the calls) fails it as
host-computed."""

import statistics


def median_time_ms(fn, warmup, rep):
    for _ in range(warmup + rep):
        fn()
    cells = [c.cell_contents for c in fn.__closure__ or ()]
    durations = next(v for v in cells if isinstance(v, list) and v and isinstance(v[0], float))
    return statistics.median(durations[warmup : warmup + rep])
