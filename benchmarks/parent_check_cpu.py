"""The parent's CPU seconds per check with a GPU check's cases, on any machine: where the server's share goes.

    python benchmarks/parent_check_cpu.py [EXERCISE ...] [--seed N] [--out FILE.json]

On a GPU the parent of a check (the server) makes the seed's cases, writes them for the child, reads the child's
outputs, judges them against the float64 references and compares the replay's outputs with them; with a GPU
check's cases (vectors up to 2²⁴ elements, matrices of ~100 MB) that is about a core-second of the server's
own CPU per check on the H200 host (docs/scale.md). This script runs one check of the course solution per
exercise through `grading.check.pipeline.check` with the GPU backend's cases but interpreted children (no GPU
needed; the children's own time is not counted), and prints the parent's CPU seconds (all its threads) with
the share of each step: making the cases, writing the job, reading the result, judging, the replay's step.

Default exercises: the lessons 2–8 mix of `scripts/load_gpu.py`. With PYTHONPATH pointing at another checkout's
src, it measures that checkout (a before/after comparison).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIX = ("vector-copy", "pid-map", "vector-add", "bench-protocol", "occupancy", "add-bias", "copy-2d", "transpose",
       "row-reduce", "softmax")  # fmt: skip
STEPS = (("cases", "make_cases"), ("job", "write_job"), ("read", "read_result"), ("judge", "judge_all"),
         ("replay", "replay_cases"))  # fmt: skip


def measure(exercise_id: str, seed: int) -> dict:
    from tritonlab.content.course import load_exercise
    from tritonlab.grading.check import cases, job, judge, pipeline, read, replay
    from tritonlab.runs import sandbox

    ex_dir = next((ROOT / "course").glob(f"*/exercises/{exercise_id}")).resolve()
    exercise = load_exercise(ex_dir, ex_dir.parent.parent.name)
    spent: dict[str, float] = {}
    modules = {"make_cases": cases, "write_job": job, "read_result": read, "judge_all": judge,
               "replay_cases": replay}  # fmt: skip
    originals = {name: getattr(mod, name) for name, mod in modules.items()}

    def timed(name: str, fn):  # noqa: ANN001, ANN202 - wraps one step, in whichever thread runs it
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.thread_time() - start

        return wrapper

    def gpu_cases(contract, seed, backend, huge_cases=False):  # noqa: ANN001, ANN202
        return originals["make_cases"](contract, seed, "gpu")  # the GPU backend's cases, whatever runs them

    for name, mod in modules.items():
        wrapped = timed(name, gpu_cases if name == "make_cases" else originals[name])
        setattr(mod, name, wrapped)
        if hasattr(pipeline, name):
            setattr(pipeline, name, wrapped)
    zygote = sandbox.Zygote("interpreter", pool=0)
    try:
        zygote.wait_ready()
        before = resource.getrusage(resource.RUSAGE_SELF)
        verdict = pipeline.check(
            exercise, ex_dir / "solution.py", "interpreter", zygote, seed=seed, timeout=600
        )
        after = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        zygote.close()
        for name, mod in modules.items():
            setattr(mod, name, originals[name])
            if hasattr(pipeline, name):
                setattr(pipeline, name, originals[name])
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"exercise": exercise_id, "passed": verdict.passed, "parent_cpu_s": round(cpu, 3),
            **{step: round(spent.get(name, 0.0), 3) for step, name in STEPS}}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exercises", nargs="*", default=list(MIX))
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--out", type=Path, help="write the rows here as JSON")
    args = ap.parse_args(argv)
    os.environ.setdefault("TRITONLAB_HOME", tempfile.mkdtemp(prefix="tritonlab-parent-cpu-"))
    rows = []
    print(f"{'exercise':<16}{'parent CPU s':>13}" + "".join(f"{step:>9}" for step, _ in STEPS), flush=True)
    for exercise_id in args.exercises:
        row = measure(exercise_id, args.seed)
        rows.append(row)
        mark = "" if row["passed"] else "  (did not pass)"
        print(f"{exercise_id:<16}{row['parent_cpu_s']:>13.2f}" + "".join(f"{row[s]:>9.2f}" for s, _ in STEPS)
              + mark, flush=True)  # fmt: skip
    mean = sum(r["parent_cpu_s"] for r in rows) / len(rows)
    print(f"{'mean':<16}{mean:>13.2f}")
    if args.out:
        args.out.write_text(
            json.dumps({"seed": args.seed, "rows": rows, "mean_parent_cpu_s": round(mean, 3)})
        )
    return 0 if all(r["passed"] for r in rows) else 1


if __name__ == "__main__":
    sys.path.append(str(ROOT / "src"))  # after PYTHONPATH: another checkout's src there is the one measured
    raise SystemExit(main())
