"""Measure the CLI's latency targets and write docs/performance.md (never a timed unit test).

Targets (issue 2/3): `tritonlab --help` ≤ 0.5 s; `tritonlab check` on the interpreter ≤ 3 s for 1-D/2-D
exercises and ≤ 10 s for the matmul family (median wall time, child start included).
Usage: python scripts/bench_cli.py [--runs N] [--only ID ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
MATMUL_FAMILY = {"matmul", "matmul-bias", "autotune"}


def time_command(args: list[str], runs: int, env: dict) -> list[float]:
    """Wall seconds per run. On a shared machine they follow the load (reported with the table); for the
    children's CPU time, see scripts/profile_check.py."""
    times = []
    subprocess.run(args, capture_output=True, env=env)  # warm-up (file cache, bytecode)
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

    env = dict(os.environ, TRITONLAB_HOME=tempfile.mkdtemp(prefix="tritonlab-bench-"))
    exe = [sys.executable, "-m", "tritonlab"]
    rows = [("tritonlab --help", 0.5, time_command([*exe, "--help"], opts.runs, env))]
    for exercise in load_course(ROOT / "course").exercises():
        if opts.only and exercise.id not in opts.only:
            continue
        target = 10.0 if exercise.id in MATMUL_FAMILY else 3.0
        cmd = [*exe, "check", exercise.id, "--solution", "--backend", "interpreter"]
        rows.append((f"tritonlab check {exercise.id} --solution", target, time_command(cmd, opts.runs, env)))
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
        "command (process start, worker start with torch+triton imports, all cases), median of the runs "
        "after one warm-up.",
        "",
        f"Load average at the end: {os.getloadavg()[0]:.1f} (1 min).",
        "",
        "| command | median s | min s | max s | target s | met |",
        "|---|---|---|---|---|---|",
    ]
    for name, target, times in rows:
        med = statistics.median(times)
        lines.append(
            f"| `{name}` | {med:.2f} | {min(times):.2f} | {max(times):.2f} | ≤ {target:g} | "
            f"{'yes' if med <= target else 'no'} |"
        )
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
