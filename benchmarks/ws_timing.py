"""What the Gluon benchmarks (`attention_ws.py`, `fp8_ws.py`) share: timing every candidate and peer of one
shape in interleaved rounds, and closing the report with each candidate's geometric mean against the fastest
peer of every row."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def interleaved(timed: dict[str, Callable[[], object]], runs: int, flops: float) -> tuple[dict, dict]:
    """(TFLOP/s from the median, the milliseconds of every round) for each of ``timed``: ``runs`` rounds, each
    timing every entry once with `triton.testing.do_bench`, so that a slow spell of the GPU falls on all."""
    import triton

    times: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(runs):
        for name, fn in timed.items():
            times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100))
    return {name: flops / (statistics.median(t) * 1e-3) / 1e12 for name, t in times.items()}, times


def finish(report: dict, names: list[str], peers: str, out: Path | None) -> int:
    """Add each of ``names``' geometric mean against its rows' fastest peer (where it has every row), print it,
    date the report, write it to ``out`` as JSON; the exit status: 1 when the report has errors."""
    from tritonlab.perf.bench import geomean

    rows = report["rows"]
    for name in names:
        ratios = [r["tflops"][name] / r["tflops"][r["fastest_peer"]] for r in rows if name in r["tflops"]]
        if rows and len(ratios) == len(rows):
            gm = geomean(ratios)
            report.setdefault("geomean_vs_fastest", {})[name] = gm
            print(f"geomean vs the fastest {peers}: {name} {gm:.3f}×")
    report["date"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    if out:
        out.write_text(json.dumps(report, indent=1))
    return 1 if report["errors"] else 0
