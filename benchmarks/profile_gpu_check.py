"""Where a repeated GPU check's seconds go, in the parent and in its two children (issue 19's breakdown).

    python benchmarks/profile_gpu_check.py --out DIR [--exercise softmax ...] [--repeats 4]

For each exercise, through one long-lived Service (what `serve`, `watch` and the check daemon hold; the sandbox
as configured): `--repeats` checks of the course solution without the speed run, each verdict's `timings`
kept whole, and the parent's cProfile of the last one (the calling thread runs `CheckRun` (grading/check/pipeline.py): case lookup,
job writing, waiting on the runs, the replay's staging, judging). Then the children's side without the
sandbox: the check child's and the replay child's work (`harness.run_check`, `replay/child.run_replay`) on the same
cases, profiled in fresh processes after one warm-up (the Triton cache filled). Writes `profile.json` and one
`*.txt` per profile into DIR. Needs a GPU (`--backend interpreter` runs the same steps on the CPU, for testing
the script).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def top(prof: cProfile.Profile, limit: int = 35) -> str:
    text = io.StringIO()
    stats = pstats.Stats(prof, stream=text)
    stats.sort_stats("cumulative").print_stats(limit)
    stats.sort_stats("tottime").print_stats(limit)
    return text.getvalue()


def service_side(exercises: list[str], repeats: int, backend: str, out: Path) -> dict:
    from tritonlab.service import Service

    service = Service(backend=backend)
    service.warm_up()
    report: dict = {}
    try:
        for exercise_id in exercises:
            exercise = service.exercise(exercise_id)
            runs = []
            for index in range(repeats):
                prof = cProfile.Profile() if index == repeats - 1 else None
                began = time.perf_counter()
                if prof:
                    verdict = prof.runcall(
                        service.check, exercise, file=exercise.solution, record=False, speed=False
                    )
                    (out / f"parent-{exercise_id}.txt").write_text(top(prof))
                else:
                    verdict = service.check(exercise, file=exercise.solution, record=False, speed=False)
                runs.append(
                    {
                        "wall_s": round(time.perf_counter() - began, 3),
                        "passed": verdict.passed,
                        "profiled": bool(prof),
                        "timings": verdict.timings,
                    }
                )
            report[exercise_id] = runs
    finally:
        service.close()
    return report


def child_phase(phase: str, exercise_id: str, run_dir: Path, backend: str, profile_to: str) -> None:
    """One child's work in this fresh process (no sandbox): what the zygote's child does after its fork."""
    if backend == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton  # noqa: F401 - the zygote imported both before forking the child

    from tritonlab.grading import contracts, harness
    from tritonlab.grading.check.cases import make_cases
    from tritonlab.grading.check.job import write_job
    from tritonlab.grading.replay.child import run_replay
    from tritonlab.models import Exercise

    if backend == "gpu":
        torch.zeros(1, device="cuda")  # a warm child has its CUDA context before the job arrives
    contract = contracts.get(exercise_id)
    solution = next((ROOT / "course").glob(f"*/exercises/{exercise_id}/solution.py")).resolve()
    cases = make_cases(contract, 7, backend)
    names = getattr(contract, "ARG_NAMES", None)
    if phase == "check":
        exercise = Exercise(
            exercise_id, "", solution.parent, contract.FUNCTION, {"en": exercise_id}, {}, {}, ()
        )
        write_job(exercise, solution, backend, cases, run_dir, names)
        job = json.loads((run_dir / "job.json").read_text())
        work = (harness.run_check, job, run_dir)
    else:
        from profile_check import replay_job  # the same job, built the same way (this folder is on sys.path)

        job = replay_job(cases, names, run_dir, solution, backend)
        work = (run_replay, job, run_dir)
    os.chdir(run_dir)
    prof = cProfile.Profile()
    began = time.perf_counter()
    prof.runcall(*work)
    wall = time.perf_counter() - began
    Path(profile_to).write_text(f"wall {wall:.3f} s\n" + top(prof))
    print(json.dumps({"wall_s": round(wall, 3)}))


def children_side(exercises: list[str], backend: str, out: Path) -> dict:
    report: dict = {}
    me = [sys.executable, __file__]
    for exercise_id in exercises:
        walls: dict = {}
        for attempt in ("warm-up", "profiled"):
            run_dir = Path(tempfile.mkdtemp(prefix="tritonlab-gpuprof-"))
            for phase in ("check", "replay"):
                target = (
                    out / f"child-{phase}-{exercise_id}.txt" if attempt == "profiled" else run_dir / "p.txt"
                )
                done = subprocess.run(
                    [
                        *me,
                        "--phase",
                        phase,
                        "--exercise",
                        exercise_id,
                        "--dir",
                        str(run_dir),
                        "--backend",
                        backend,
                        "--profile-to",
                        str(target),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                lines = done.stdout.strip().splitlines()
                walls[f"{attempt}.{phase}"] = (
                    json.loads(lines[-1])
                    if done.returncode == 0 and lines
                    else {"error": done.stderr[-1500:]}
                )
        report[exercise_id] = walls
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--exercise", action="append")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--backend", default="gpu", choices=("gpu", "interpreter"))
    parser.add_argument("--phase", choices=("check", "replay"))
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--profile-to")
    opts = parser.parse_args()
    exercises = opts.exercise or ["vector-copy", "softmax", "matmul"]
    if opts.phase:
        child_phase(opts.phase, exercises[0], opts.dir, opts.backend, opts.profile_to)
        return
    if opts.out is None:
        parser.error("--out DIR is needed")
    opts.out.mkdir(parents=True, exist_ok=True)
    report = {"service": service_side(exercises, opts.repeats, opts.backend, opts.out)}
    (opts.out / "profile.json").write_text(json.dumps(report, indent=1))
    report["children"] = children_side(exercises, opts.backend, opts.out)
    (opts.out / "profile.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: list(v) for k, v in report.items()}))


if __name__ == "__main__":
    main()
