"""What a GPU check compiles, per exercise, measured without a GPU: the kernels and their compile CPU for cuda:90.

    python benchmarks/check_compiles.py [EXERCISE ...] [--file starter|solution] [--seed N] [--count-only]
                                        [--out FILE.json]

A GPU check runs the file's function on the exercise's GPU cases; every launch whose specialization no earlier
launch had (its argument types, the integers Triton specialises — equal to 1, divisible by 16 — its
constexprs and launch options) is a kernel compiled of its own, once in the learner's compile cache by the
check child and once more in the replay's (docs/scale.md, "Where a check's CPU goes"). This script makes the
GPU backend's cases for a seed, calls the course's own file (`--file`: the solution by default, or the
starter) on each case in this process with every launch recorded instead of run (on GPU tensors where there is
a GPU, else CPU tensors: a file whose host code branches on the device, as matmul's solution does, then counts
its CPU branch's launches), and compiles each distinct launch once for `cuda:90` with Triton's bundled ptxas
into an empty cache, counting this process's and its children's CPU. Prints, per exercise: cases, launches, kernels, the compile's CPU
seconds (one cache's worth: a first check pays about twice that), per kernel, and the MiB its entries take
in the cache (4 KiB blocks, as a tmpfs counts them; with TRITON_STORE_BINARY_ONLY=1 as the replay stores
them: runs/zygote.py BINARY_ONLY_MODES).

It imports the course's files into this process: run it on the course, not on a learner's file. An autotuned
kernel counts its first configuration only (a GPU check compiles every configuration the autotuner tries).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_seconds() -> float:
    """This process's CPU and that of its reaped children (ptxas)."""
    mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def load(path: Path, name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # a contract's run_case finds the file's other functions as the harness's "learner"
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def variant_key(jit_fn: object, args: tuple, kwargs: dict) -> tuple[tuple, tuple]:
    """A launch's compile key as Triton's launcher forms it (grading/triton_api.bind_launch), and its parts."""
    from tritonlab.grading import triton_api

    signature, constexprs, attrs, options = triton_api.bind_launch(jit_fn, args, kwargs)
    key = (
        jit_fn.fn.__module__,
        jit_fn.fn.__qualname__,
        tuple(signature.items()),
        tuple(sorted((index, repr(value)) for index, value in constexprs.items())),
        tuple(sorted(attrs)),
        tuple(sorted(options.items())),
    )
    return key, (jit_fn, signature, constexprs, attrs, options)


def launches_of(exercise: object, which: str, seed: int) -> tuple[int, int, list, list[str]]:
    """(cases, launches, distinct launches, problems) of one GPU check of the course's file, launches recorded."""
    import torch

    from tritonlab.grading import contracts
    from tritonlab.grading.check import cases as check_cases
    from tritonlab.grading.check import job
    from tritonlab.grading.replay.predict import record_case

    contract = contracts.get(exercise.id)
    cases = check_cases.make_cases(contract, seed, "gpu")
    module = load(getattr(exercise, which), "learner")
    fn = getattr(module, exercise.function)
    distinct: dict[tuple, tuple] = {}
    problems: list[str] = []
    launched = 0
    run_dir = Path(
        tempfile.mkdtemp(prefix="check-compiles-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    )
    try:
        job.write_job(
            exercise, getattr(exercise, which), "gpu", cases, run_dir, getattr(contract, "ARG_NAMES", None)
        )
        specs = json.loads((run_dir / "job.json").read_text())["cases"]
        device = "cuda" if torch.cuda.is_available() else "cpu"  # host code may branch on the device
        for index, spec in enumerate(specs):
            recorded, problem = record_case(contract, fn, spec, run_dir, index, device)
            if problem:
                problems.append(problem)
            for jit_fn, args, kwargs in recorded:
                launched += 1
                key, launch = variant_key(jit_fn, args, kwargs)
                distinct.setdefault(key, launch)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    return len(cases), launched, list(distinct.values()), problems


def cache_bytes() -> int:
    """The bytes the compile cache's files take, each rounded up to 4 KiB blocks."""
    total = 0
    for root, _dirs, names in os.walk(os.environ["TRITON_CACHE_DIR"]):
        for name in names:
            size = os.lstat(os.path.join(root, name)).st_size
            total += -(-size // 4096) * 4096
    return total


def compile_all(kernels: list) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, failures) of compiling each launch once for cuda:90 into an empty cache."""
    from tritonlab.grading import triton_api

    target = triton_api.target("cuda", 90, 32)
    failures = 0
    began_cpu, began = cpu_seconds(), time.perf_counter()
    for jit_fn, signature, constexprs, attrs, options in kernels:
        try:
            triton_api.compile_kernel(jit_fn, signature, constexprs, attrs, options, target)
        except Exception as exc:  # noqa: BLE001 - reported, not fatal: the others still count
            failures += 1
            print(
                f"  compile failed: {jit_fn.fn.__name__}: {type(exc).__name__}: {str(exc)[:160]}",
                file=sys.stderr,
            )
    return cpu_seconds() - began_cpu, time.perf_counter() - began, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("exercises", nargs="*", metavar="EXERCISE", help="default: every exercise")
    parser.add_argument("--file", choices=("solution", "starter"), default="solution")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--count-only", action="store_true", help="count the kernels, compile nothing")
    parser.add_argument("--out", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    # an empty cache: every kernel compiled anew
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="check-compiles-cache-")
    sys.path.insert(0, str(ROOT / "src"))
    from tritonlab.content.course import load_course

    exercises = load_course().exercises()
    unknown = sorted(set(args.exercises) - {e.id for e in exercises})
    if unknown:
        parser.error(f"no such exercise: {', '.join(unknown)}")
    rows = []
    print("| exercise | cases | launches | kernels | compile CPU s (one cache) | per kernel | cache MiB |")
    print("|---|---|---|---|---|---|---|")
    for exercise in exercises:
        if args.exercises and exercise.id not in args.exercises:
            continue
        cases, launched, kernels, problems = launches_of(exercise, args.file, args.seed)
        before = cache_bytes()
        cpu, wall, failures = (0.0, 0.0, 0) if args.count_only else compile_all(kernels)
        stored = (cache_bytes() - before) / 2**20
        row = {"exercise": exercise.id, "file": args.file, "seed": args.seed, "cases": cases,
               "launches": launched, "kernels": len(kernels), "compile_cpu_s": round(cpu, 2),
               "compile_wall_s": round(wall, 2), "compile_failures": failures, "cache_mib": round(stored, 2),
               "problems": problems}  # fmt: skip
        rows.append(row)
        per = f"{cpu / len(kernels):.2f}" if kernels and not args.count_only else "—"
        shown = "—" if args.count_only else f"{cpu:.2f}"
        print(
            f"| {exercise.id} | {cases} | {launched} | {len(kernels)} | {shown} | {per} | {stored:.1f} |",
            flush=True,
        )
        for problem in problems:
            print(f"  not recorded: {problem}", file=sys.stderr)
    if not args.count_only and rows:
        total = sum(r["compile_cpu_s"] for r in rows)
        mib = sum(r["cache_mib"] for r in rows)
        print(
            f"\n{sum(r['kernels'] for r in rows)} kernels, {total:.1f} CPU s and {mib:.1f} MiB for one cache",
            flush=True,
        )
    if args.out:
        import platform

        import triton

        args.out.write_text(json.dumps({"triton": triton.__version__, "python": platform.python_version(),
                                        "cpu_count": os.cpu_count(), "rows": rows}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
