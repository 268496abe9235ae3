"""Step 9 of a check, `speed`: a passing GPU check timed once on its exercise's representative size, never
graded. Two sandboxed runs (perf/speed.py): the learner's module records one call, a trusted child that never
imports it replays and times the launches. Mixed into `Service` (facade.py); service/check.py calls it after
the verdict was saved and shown."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tritonlab.grading.check.run import usage
from tritonlab.models import Exercise, Verdict
from tritonlab.perf import bench_learner
from tritonlab.runs import caches, capacity
from tritonlab.service.gate import GpuBusy
from tritonlab.service.jobs import no_result

# The speed line is timed on an idle GPU only (never graded): while other checks wait, it is not taken, and a
# timing run that finds no idle moment in this many seconds gives up.
SPEED_IDLE_WAIT_S = capacity.IDLE_WAIT_S
BUSY = (
    "not timed: the GPU was busy with other checks (the speed line is measured only on an idle GPU, so that no "
    "neighbour's run skews it; `tritonlab bench` times your kernel on request)"
)


class Speed:
    """The speed step's methods; `_no_speed` and `_add_speed` are what a test overrides to send an interpreter
    check down the timed branch (tests/test_service_record_first.py)."""

    def _no_speed(self, verdict: Verdict, wanted: bool) -> str:
        """Why this check is not timed; "" when it is (a passing GPU check that asked for it)."""
        if self.backend != "gpu":
            return bench_learner.NO_SPEED_INTERPRETER
        if not verdict.passed:
            return "timed only after the check passes"
        return "" if wanted else "not asked for"

    def _add_speed(
        self, verdict: Verdict, exercise: Exercise, target: Path, source: str, on_wait: Callable | None
    ) -> None:
        """Time a passing GPU check (the text it graded) on its exercise's representative size and put the
        result on the verdict: one sandboxed run records the learner's launches, a trusted one replays and
        times them (perf/speed.py) — never the learner's own process."""
        from tritonlab.perf import peaks

        job = bench_learner.speed_job(exercise, target.resolve(), peaks.load_cache())
        if job is None:
            verdict.speed_reason = bench_learner.NO_SPEED_CASE
            return
        data = self.speed_runs(job, exercise, source, on_wait, verdict.timings)
        verdict.speed = bench_learner.speed_summary(data, exercise.speed_goal)

    def speed_runs(
        self,
        job: dict,
        exercise: Exercise,
        source: str,
        on_wait: Callable | None = None,
        timings: dict | None = None,
    ) -> dict:
        """The two runs of perf/speed.py for a speed job (bench_learner.speed_job): the learner's module records
        one call, a trusted child replays and times it. Their report: {"rows": [...], "problems": [...]}.
        `timings` gets what each run's process tree used (`speed_record_cpu_s`, `speed_time_cpu_s`, their
        faults and switches: grading/check/run.py `usage`)."""
        timings = {} if timings is None else timings
        from tritonlab.perf import speed

        if self.exclusive_runs() and self.gate().waiting:  # graded checks are waiting: they go first
            return {"problems": [BUSY]}
        # 1. the learner's module, one recorded call on the representative size (nothing timed there)
        result, data = self.run_job(job, speed.RECORD_RESULT, on_wait=on_wait, timeout=120.0, source=source)
        usage(timings, "speed_record", result)
        if data is None:
            data = no_result("the recording run", result)
        elif isinstance(data.get("record"), dict) and not data.get("problems"):
            # 2. timed by replaying that record in a trusted child that never imports the learner's file
            timing = {
                "mode": "speed",
                "exercise": exercise.id,
                "file": job["file"],
                "gpu": job.get("gpu", True),
                "record": data["record"],
                "peaks_by_gpu": job["peaks_by_gpu"],
            }
            try:
                result, data = self.run_job(
                    timing,
                    speed.SPEED_RESULT,
                    on_wait=on_wait,
                    timeout=120.0,
                    cache=caches.REPLAY,
                    files={"source.py": source},
                    exclusive=True,  # the GPU alone while it times: no neighbour's run skews the figure
                    idle_wait=SPEED_IDLE_WAIT_S,  # and only once it is idle: graded checks never wait for it
                )
            except GpuBusy:
                return {"problems": [BUSY]}
            usage(timings, "speed_time", result)
            if data is None:
                data = no_result("the timing run", result)
        else:
            data = {
                "problems": data.get("problems") or ["your kernel could not be recorded on the speed case"]
            }
        return data
