"""What the Gluon benchmarks (`attention_ws.py`, `attention_backward_ws.py`, `fp8_ws.py`) share: the report they
fill (only on a Hopper GPU), timing every candidate and peer of one shape in interleaved rounds, one row per
shape, and closing the report with each candidate's geometric mean against the fastest peer of every row."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def hopper_report(**fields: object) -> dict | None:
    """The report a benchmark fills (the GPU, torch and Triton, its rows and errors, and ``fields``), with torch
    seeded; None, after saying so, without a CUDA GPU of compute capability 9.x (the Gluon kernels' target)."""
    import torch
    import triton

    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        print("needs a CUDA GPU of compute capability 9.x")
        return None
    torch.manual_seed(0)
    return {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "rows": [], **fields, "errors": []}  # fmt: skip


def interleaved(timed: dict[str, Callable[[], object]], runs: int, flops: float) -> tuple[dict, dict]:
    """(TFLOP/s from the median, the milliseconds of every round) for each of ``timed``: ``runs`` rounds, each
    timing every entry once with `triton.testing.do_bench`, so that a slow spell of the GPU falls on all."""
    import triton

    times: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(runs):
        for name, fn in timed.items():
            times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100))
    return {name: flops / (statistics.median(t) * 1e-3) / 1e12 for name, t in times.items()}, times


def add_row(report: dict, label: str, width: int, tf: dict, times: dict, best: str, **fields: object) -> None:
    """Add one shape's row (``fields``, then TFLOP/s, the rounds' ms and the fastest peer) to the report and print
    it: each entry's TFLOP/s and its ratio to ``best``."""
    report["rows"].append({**fields, "tflops": tf, "ms": times, "fastest_peer": best})
    print(
        f"{label:{width}} " + "  ".join(f"{n} {tf[n]:.0f} ({tf[n] / tf[best]:.3f}×)" for n in tf), flush=True
    )


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
