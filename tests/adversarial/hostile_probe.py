"""Run in its own process by test_hostile_outputs.py: a Service on the fixture course meets learner programs
that write hostile result files; prints, as JSON, each verdict and how much this (the parent) process's peak
resident memory (VmHWM) grew while it was read."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LEARNERS = HERE / "learners"


def peak_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def main(work: Path) -> dict:
    from tritonlab.service import Service
    from tritonlab.viz import run as vizrun

    service = Service(
        course_dir=ROOT / "tests" / "fixtures" / "course", workspace_dir=work / "ws", backend="interpreter"
    )
    exercise = service.exercise("vector-copy")
    report: dict = {}
    try:
        warm = service.check(exercise, file=exercise.solution, record=False, seed=7, timeout=60)
        report["warm_passed"] = warm.passed
        for name in ("huge_npy_many", "deep_json"):
            before = peak_kib()
            verdict = service.check(exercise, file=LEARNERS / f"{name}.py", record=False, seed=7, timeout=60)
            report[name] = {
                "passed": verdict.passed,
                "failures": [[f.kind, f.message] for f in verdict.failures],
                "growth_kib": peak_kib() - before,
            }
        before = peak_kib()
        run, error = service.run_file(LEARNERS / "deep_error_json.py", timeout=60)
        report["deep_json_run"] = {"error": error, "growth_kib": peak_kib() - before}
        cases = vizrun.candidate_cases(exercise.id, None, 0)
        before = peak_kib()
        result = vizrun.record(exercise, LEARNERS / "huge_viz.py", service.zygote(), cases, timeout=60)
        report["huge_viz"] = {
            "malformed": result.get("malformed"),
            "process_failure": result.get("process_failure"),
            "cases": len(result.get("cases", [])),
            "growth_kib": peak_kib() - before,
        }
        after = service.check(exercise, file=exercise.solution, record=False, seed=7, timeout=60)
        report["recovered"] = after.passed
    finally:
        service.close()
    return report


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
