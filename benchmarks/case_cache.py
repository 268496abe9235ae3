"""What the per-seed case cache saves on a repeated check (docs/performance.md's table), measured on the CPU.

    python benchmarks/case_cache.py [gpu | interpreter] [--only EXERCISE ...] [--seed 7]

For each exercise, on the backend's cases (default `gpu`: the large ones, made on the CPU, no GPU needed): the
time to make the cases and their float64 references (matmul-style products, softmax, RMSNorm) the first time,
and again for the same seed through grading/case_cache.py + contracts.cached; then the CPU seconds of the rest
of the parent's work before the run: the contract's own `prepare` (references and tolerances, as the server
makes them ahead with the next seed's cases) and writing the job (each input encoded as the child reads it:
bf16 and fp8 as bits) into a folder in /dev/shm. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from tritonlab.content.course import load_course  # noqa: E402
from tritonlab.grading import case_cache, contracts  # noqa: E402
from tritonlab.grading.check import cases as check_cases  # noqa: E402
from tritonlab.grading.check import job  # noqa: E402
from tritonlab.grading.contracts import Tensor, cached  # noqa: E402


def references(exercise_id: str, cases: list) -> None:
    for case in cases:
        tensors = [a for a in case.args if isinstance(a, Tensor)]
        if exercise_id in ("matmul", "autotune", "matmul-bias") and len(tensors) >= 2:
            cached(
                case,
                "expected" if exercise_id != "matmul-bias" else "dot",
                lambda t=tensors: t[0].values @ t[1].values,
            )
        elif exercise_id == "softmax" and not case.expect_error:
            from tritonlab.grading.contracts.softmax import reference

            cached(case, "expected", lambda t=tensors: reference(t[0].values))


def cpu_seconds() -> float:
    used = os.times()
    return used.user + used.system


def prepare_and_write(exercise: object, contract: object, backend: str, cases: list) -> tuple[float, float]:
    """CPU seconds of the contract's `prepare` on every case, then of writing the check's job."""
    start = cpu_seconds()
    check_cases.prepare_references(contract, cases)
    prepared = cpu_seconds()
    folder = Path(
        tempfile.mkdtemp(prefix="case-cache-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None)
    )
    try:
        job.write_job(
            exercise, exercise.solution, backend, cases, folder, getattr(contract, "ARG_NAMES", None)
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return prepared - start, cpu_seconds() - prepared


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("backend", nargs="?", default="gpu", choices=("gpu", "interpreter"))
    parser.add_argument("--only", nargs="*", default=[], metavar="EXERCISE", help="these exercises alone")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    backend = args.backend
    cache = case_cache.CaseCache(budget=8 << 30)
    print(
        "| exercise | first: cases + references (s) | same seed again (s) | prepare, CPU s | job written, CPU s | input MB |"
    )
    print("|---|---|---|---|---|---|")
    for ex in load_course().exercises():
        if args.only and ex.id not in args.only:
            continue
        contract = contracts.get(ex.id)
        times = []
        for _ in range(2):
            t = time.perf_counter()
            cases = cache.get(
                (ex.id, backend, args.seed),
                lambda c=contract: check_cases.unique_names(
                    c.cases(np.random.default_rng(args.seed), backend)
                ),
            )
            references(ex.id, cases)
            times.append(time.perf_counter() - t)
        prepared, written = prepare_and_write(ex, contract, backend, cases)
        print(
            f"| {ex.id} | {times[0]:.2f} | {times[1]:.4f} | {prepared:.2f} | {written:.2f} "
            f"| {case_cache.case_bytes(cases) / 1e6:.0f} |",
            flush=True,
        )
        cache.clear()


if __name__ == "__main__":
    main()
