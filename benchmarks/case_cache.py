"""What the per-seed case cache saves on a repeated check (docs/performance.md's table), measured on the CPU.

    python benchmarks/case_cache.py [gpu | interpreter]

For each exercise, on the backend's cases (default `gpu`: the large ones, made on the CPU, no GPU needed): the
time to make the cases and their float64 references (matmul-style products, softmax, RMSNorm) the first time,
and again for the same seed through grading/case_cache.py + contracts.cached. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from tritonlab.content.course import load_course  # noqa: E402
from tritonlab.grading import case_cache, contracts  # noqa: E402
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("backend", nargs="?", default="gpu", choices=("gpu", "interpreter"))
    backend = parser.parse_args(argv).backend
    cache = case_cache.CaseCache(budget=8 << 30)
    print("| exercise | first: cases + references (s) | same seed again (s) | input MB |")
    print("|---|---|---|---|")
    for ex in load_course().exercises():
        contract = contracts.get(ex.id)
        times = []
        for _ in range(2):
            t = time.perf_counter()
            cases = cache.get(
                (ex.id, backend, 7), lambda c=contract: c.cases(np.random.default_rng(7), backend)
            )
            references(ex.id, cases)
            times.append(time.perf_counter() - t)
        print(f"| {ex.id} | {times[0]:.2f} | {times[1]:.4f} | {case_cache.case_bytes(cases) / 1e6:.0f} |")
        cache.clear()


if __name__ == "__main__":
    main()
