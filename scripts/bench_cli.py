"""Measure the CLI's latency targets and write docs/performance.md (never a timed unit test).

Targets (issues 2/3, kept by 16): `tritonlab --help` ≤ 0.5 s; a repeated `tritonlab check` on the interpreter
≤ 3 s for 1-D/2-D exercises and ≤ 10 s for the tl.dot family (median wall time of the whole command). A check
goes through this user's background check worker (cli/daemon.py) by default: the table times that path after a
warm-up call that starts it, and adds the first check (the worker started by it) and a check with
TRITONLAB_DAEMON=0 (worker started in the command, as before) for comparison.
Usage: python scripts/bench_cli.py [--runs N] [--only ID ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
# tl.dot exercises: interpreted GEMM tiles take longer (≤ 10 s)
MATMUL_FAMILY = {
    "matmul",
    "matmul-bias",
    "autotune",
    "grouped-matmul-order",
    "attention-forward",
    "attention-backward",
}


def time_command(args: list[str], runs: int, env: dict, warm_up: bool = True) -> list[float]:
    """Wall seconds per run. On a shared machine they follow the load (reported with the table); for the
    children's CPU time, see benchmarks/profile_check.py."""
    times = []
    if warm_up:  # file cache, bytecode, and the background check worker
        subprocess.run(args, capture_output=True, env=env)
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--no-write", action="store_true", help="print the table, leave docs/performance.md")
    opts = parser.parse_args()
    from tritonlab.content.course import load_course

    home = tempfile.mkdtemp(prefix="tritonlab-bench-")
    env = {k: v for k, v in os.environ.items() if k != "TRITONLAB_DAEMON"} | {"TRITONLAB_HOME": home}
    exe = [sys.executable, "-m", "tritonlab"]
    stop = [*exe, "daemon", "stop"]
    rows = [("tritonlab --help", 0.5, time_command([*exe, "--help"], opts.runs, env))]
    timed: list[str] = []  # exercise ids, in the table's order
    try:
        for exercise in load_course(ROOT / "course").exercises():
            if opts.only and exercise.id not in opts.only:
                continue
            timed.append(exercise.id)
            target = 10.0 if exercise.id in MATMUL_FAMILY else 3.0
            cmd = [*exe, "check", exercise.id, "--solution", "--backend", "interpreter"]
            rows.append(
                (f"tritonlab check {exercise.id} --solution", target, time_command(cmd, opts.runs, env))
            )
        first = timed[0] if timed else "vector-copy"
        cmd = [*exe, "check", first, "--solution", "--backend", "interpreter"]
        cold = []
        for _ in range(opts.runs):
            subprocess.run(stop, capture_output=True, env=env)
            cold.append(time_command(cmd, 1, env, warm_up=False)[0])
        rows.append((f"first tritonlab check {first} (starts the worker)", None, cold))
        subprocess.run(stop, capture_output=True, env=env)
        alone = dict(env, TRITONLAB_DAEMON="0")
        rows.append(
            (f"TRITONLAB_DAEMON=0 tritonlab check {first}", None, time_command(cmd, opts.runs, alone))
        )
    finally:
        subprocess.run(stop, capture_output=True, env=env)
        shutil.rmtree(home, ignore_errors=True)
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    lines = [
        "# CLI latency (interpreter)",
        "",
        f"Measured by `python scripts/bench_cli.py --runs {opts.runs}` on {dt.date.today().isoformat()}: "
        f"{os.cpu_count()} CPU cores ({cpu}), Python {platform.python_version()}, "
        f"torch {metadata.version('torch')}, triton {metadata.version('triton')}. Wall time of the whole "
        "command, median of the runs after one warm-up call. A check goes through the background check "
        "worker by default (cli/daemon.py: the CLI sends the request, the worker's zygote forks the runs); the "
        "last two rows time the first check, which starts that worker (torch + triton imported), and a "
        "check with the worker turned off. The sandbox is the default here: the hardened layer, per-run "
        "cgroups.",
        "",
        f"Load average at the end: {os.getloadavg()[0]:.1f} (1 min).",
        "",
        "| command | median s | min s | max s | target s | met |",
        "|---|---|---|---|---|---|",
    ]
    for name, target, times in rows:
        med = statistics.median(times)
        goal, met = ("—", "—") if target is None else (f"≤ {target:g}", "yes" if med <= target else "no")
        lines.append(f"| `{name}` | {med:.2f} | {min(times):.2f} | {max(times):.2f} | {goal} | {met} |")
    print("\n".join(lines))
    if opts.no_write:
        return
    # this table is the file's first section: keep every later section ("# ..." headings) as it is
    out = ROOT / "docs" / "performance.md"
    old = out.read_text(encoding="utf-8") if out.exists() else ""
    rest = old.split("\n# ", 1)[1] if "\n# " in old else ""
    out.write_text("\n".join(lines) + "\n" + (f"\n# {rest}" if rest else ""))


if __name__ == "__main__":
    main()
