"""What idle CPU thread pools cost the server's own work on a check, spinning or asleep (config.py `thread_wait_env`).

    python benchmarks/thread_wait.py [gpu | interpreter] [--only EXERCISE ...] [--seed 7]

For each exercise, the parent's work before and around a check that needs no GPU: the cases for one seed,
their float64 references (benchmarks/case_cache.py's), the contract's `prepare` and the job written to
/dev/shm. It runs twice, each time in a fresh process: once with TRITONLAB_THREAD_WAIT=spin (numpy's OpenBLAS
and torch's OpenMP workers spin after each parallel call, as the libraries do by default) and once as the CLI
starts (they sleep at once). Prints a Markdown table of CPU seconds (every thread of the process,
`os.times`) and wall seconds per exercise. On a machine with many cores the spin costs up to one core per
worker thread for about 0.1 s after each matrix product; on a 2-core machine it is one thread's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))


def measure(backend: str, only: list[str], seed: int) -> dict[str, list[float]]:
    """Child side: {exercise: [CPU s, wall s]} of making one seed's cases, references, prepare and job."""
    from tritonlab import config

    config.quiet_thread_pools()  # what the CLI does first; nothing with TRITONLAB_THREAD_WAIT=spin
    import numpy as np
    from case_cache import prepare_and_write, references

    from tritonlab.content.course import load_course
    from tritonlab.grading import contracts
    from tritonlab.grading.check import cases as check_cases

    out: dict[str, list[float]] = {}
    for ex in load_course().exercises():
        if only and ex.id not in only:
            continue
        contract = contracts.get(ex.id)
        used, wall = os.times(), time.perf_counter()
        cases = check_cases.unique_names(contract.cases(np.random.default_rng(seed), backend))
        references(ex.id, cases)
        prepare_and_write(ex, contract, backend, cases)
        done = os.times()
        out[ex.id] = [
            round(done.user + done.system - used.user - used.system, 3),
            round(time.perf_counter() - wall, 3),
        ]
    return out


def run(mode: str, backend: str, only: list[str], seed: int) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT")}
    env.pop("TRITONLAB_THREAD_WAIT", None)
    if mode == "spin":
        env["TRITONLAB_THREAD_WAIT"] = "spin"
    argv = [
        sys.executable,
        __file__,
        backend,
        "--seed",
        str(seed),
        "--child",
        *(["--only", *only] if only else []),
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("backend", nargs="?", default="gpu", choices=("gpu", "interpreter"))
    parser.add_argument("--only", nargs="*", default=[], metavar="EXERCISE", help="these exercises alone")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.backend, args.only, args.seed)))
        return
    spin = run("spin", args.backend, args.only, args.seed)
    asleep = run("sleep", args.backend, args.only, args.seed)
    print(f"{os.cpu_count()} cores; {args.backend} cases, seed {args.seed}")
    print("| exercise | CPU s, spinning | CPU s, asleep | wall s, spinning | wall s, asleep |")
    print("|---|---|---|---|---|")
    totals = [0.0, 0.0, 0.0, 0.0]
    for name, (cpu_spin, wall_spin) in spin.items():
        cpu_sleep, wall_sleep = asleep[name]
        row = [cpu_spin, cpu_sleep, wall_spin, wall_sleep]
        totals = [t + v for t, v in zip(totals, row, strict=True)]
        print(f"| {name} | " + " | ".join(f"{v:.2f}" for v in row) + " |")
    print("| **all** | " + " | ".join(f"**{v:.2f}**" for v in totals) + " |")


if __name__ == "__main__":
    main()
