"""CPU seconds of a check's two children, measured in-process: on a machine shared with other work, the CLI's wall
time follows the load (docs/performance.md), the children's CPU time much less.

    python benchmarks/profile_check.py softmax [--runs 5] [--profile | --cases]

Each run is two fresh processes, as in a real check: the check child's work (`harness.run_check` on the course
solution, TRITON_INTERPRET=1) and then the replay child's (`replay/child.run_replay` on the records it wrote). Prints
the median CPU seconds of each. `--profile` prints the check child's cProfile instead (by own time); `--cases`
does one run and prints what the check child timed per case and the replay child's lowering and total. With
PYTHONPATH pointing at another checkout's src, it measures that checkout (a before/after comparison).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(phase: str, exercise_id: str, run_dir: Path, profile: bool) -> None:
    os.environ["TRITON_INTERPRET"] = "1"
    import torch  # noqa: F401 - imported by the zygote before a child forks: not part of a check
    import triton  # noqa: F401

    from tritonlab.grading import contracts, harness
    from tritonlab.grading.check.cases import make_cases
    from tritonlab.grading.check.job import write_job
    from tritonlab.grading.replay.child import run_replay
    from tritonlab.models import Exercise

    contract = contracts.get(exercise_id)
    solution = next((ROOT / "course").glob(f"*/exercises/{exercise_id}/solution.py")).resolve()
    cases = make_cases(contract, 7, "interpreter")
    names = getattr(contract, "ARG_NAMES", None)
    started = time.process_time()
    if phase == "check":
        exercise = Exercise(
            exercise_id, "", solution.parent, contract.FUNCTION, {"en": exercise_id}, {}, {}, ()
        )
        write_job(exercise, solution, "interpreter", cases, run_dir, names)
        os.chdir(run_dir)
        job = json.loads((run_dir / "job.json").read_text())
        started = time.process_time()
        if profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.runcall(harness.run_check, job, run_dir)
            pstats.Stats(prof).sort_stats("tottime").print_stats(20)
        else:
            harness.run_check(job, run_dir)
    else:
        job = replay_job(cases, names, run_dir, solution, "interpreter")
        os.chdir(run_dir)
        started = time.process_time()
        run_replay(job, run_dir)
    print(json.dumps({"cpu": round(time.process_time() - started, 3)}))


def replay_job(cases: list, names: list | None, run_dir: Path, solution: Path, backend: str) -> dict:
    """The replay job the grader would write after the check child in `run_dir` (its records and results)."""
    from tritonlab.grading.check.job import encode_case

    (run_dir / "source.py").write_text(solution.read_text())
    result = json.loads((run_dir / "result.json").read_text())
    returned = {e["name"] for e in result["cases"] if e.get("status") == "returned"}
    job_cases = []
    for i, case in enumerate(cases):
        record = run_dir / f"c{i}_launches.json"
        if case.name in returned and record.is_file():
            args, kwargs = encode_case(case, i, names, run_dir)
            job_cases.append(
                {"index": i, "args": args, "kwargs": kwargs, "record": json.loads(record.read_text())}
            )
    return {"backend": backend, "file": str(solution), "source": "source.py", "cases": job_cases}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("exercise")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--cases", action="store_true", help="one run: seconds per case, and the replay's")
    parser.add_argument("--phase")
    parser.add_argument("--dir")
    opts = parser.parse_args()
    if opts.phase:
        child(opts.phase, opts.exercise, Path(opts.dir), opts.profile)
        return
    me = [sys.executable, __file__, opts.exercise]
    if opts.profile:
        subprocess.run([*me, "--phase", "check", "--dir", tempfile.mkdtemp(), "--profile"], check=True)
        return
    seconds: dict[str, list[float]] = {"check": [], "replay": []}
    if opts.cases:
        run_dir = Path(tempfile.mkdtemp(prefix="tritonlab-profile-"))
        for phase in ("check", "replay"):
            subprocess.run([*me, "--phase", phase, "--dir", str(run_dir)], capture_output=True, check=True)
        for entry in json.loads((run_dir / "result.json").read_text())["cases"]:
            print(f"{entry.get('seconds', 0):7.3f} s  {entry['name']}")
        reply = json.loads((run_dir / "replay.json").read_text())
        print(f"replay child: {reply.get('seconds')} s, of which lowering {reply.get('lower_seconds')} s")
        return
    for _ in range(opts.runs):
        run_dir = tempfile.mkdtemp(prefix="tritonlab-profile-")
        for phase in ("check", "replay"):
            out = subprocess.run([*me, "--phase", phase, "--dir", run_dir], capture_output=True, text=True)
            seconds[phase].append(json.loads(out.stdout.strip().splitlines()[-1])["cpu"])
    for phase, values in seconds.items():
        print(f"{phase} child CPU s: median {statistics.median(values):.2f} (runs: {values})")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
