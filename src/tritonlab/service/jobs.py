"""Every kind of run that is not a check, through the same gate, limits and sandbox: a learner's program
(`run_file`), any harness job (`run_job`: bench, the speed runs), `inspect` and `profile`. Mixed into `Service`
(facade.py). The JSON a run wrote is hostile: read capped and depth-checked (runs/rundir.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tritonlab.grading import kernel_inspect
from tritonlab.grading.check import job as check_job
from tritonlab.models import Exercise
from tritonlab.runs import capacity, rundir, runfolder
from tritonlab.runs.collect import Run, RunResult
from tritonlab.runs.limits import default_limits


def read_json_object(path: Path) -> dict | None:
    """A JSON object the child wrote, or None: a run can leave anything in its folder (the run dir is
    sanitized by Run.wait, so no links or FIFOs; the content is still the learner's to spoil). Too large,
    too deep or not JSON: an error object saying the run wrote malformed results."""
    try:
        data = rundir.read_json(path)
    except rundir.Malformed as problem:
        return malformed_error(problem)
    return data if isinstance(data, dict) else None


def malformed_error(problem: rundir.Malformed) -> dict:
    return {
        "type": "MalformedResult",
        "message": problem.message,
        "where": "",
        "source": "",
        "hint": "",
        "traceback": "",
    }


def no_result(run: str, result: RunResult) -> dict:
    """The report of a sandboxed run that wrote none: how it ended."""
    why = "timed out" if result.timed_out else f"exit {result.exit_code}, signal {result.signal}"
    return {"problems": [f"{run} ended without a result ({why})"]}


class Jobs:
    """Runs other than checks, each through the service's gate (workers.py) and the sandbox's limits; those
    that time the GPU (profile, bench, the speed line's timing run) alone on it (gate.py)."""

    def run_file(
        self,
        file: Path,
        on_output: Callable[[str], None] | None = None,
        on_start: Callable[[Run], None] | None = None,
        on_wait: Callable[[int], None] | None = None,
        timeout: float = 60.0,
        argv: list[str] | None = None,
        text: str | None = None,
    ) -> tuple[RunResult, dict | None]:
        """Run a learner program as __main__ in a sandboxed child. Returns the result and its error, if any.
        Runs `text` when given (the text a request sent), else the file's text as read now."""
        path = Path(file).resolve()
        source = text if text is not None else check_job.read_source(path)
        job = {"mode": "run", "file": str(path), "argv": argv or []}
        result, error = self.run_job(
            job,
            "error.json",
            on_output=on_output,
            on_start=on_start,
            on_wait=on_wait,
            timeout=timeout,
            source=source,
        )
        if result.exit_code == 0 and not result.timed_out and not result.signal:
            error = None  # error.json speaks for a failed program only; a clean exit may leave junk
        return result, error

    def run_job(
        self,
        job: dict,
        result_file: str,
        on_output: Callable[[str], None] | None = None,
        on_start: Callable[[Run], None] | None = None,
        on_wait: Callable[[int], None] | None = None,
        timeout: float = 60.0,
        source: str | None = None,
        cache: str | None = None,
        files: dict[str, str] | None = None,
        exclusive: bool = False,
        idle_wait: float | None = None,
    ) -> tuple[RunResult, dict | None]:
        """Run one harness job in a sandboxed child, queued through the gate; return the run and the JSON the
        child wrote to `result_file` (None when it wrote none, or something that is not a JSON object).
        With `source`, the child runs that text (a snapshot in the run directory named like `job["file"]`).
        `cache`: the compile cache (default the learner's; the replay's only for a trusted mode, which the
        zygote enforces); `files`: texts written into the run directory first (name -> text). `exclusive`: the
        run times the GPU, so it runs alone on it (service/gate.py; on this machine's GPU only); `idle_wait`: and
        only when the GPU is idle, giving up with `gate.GpuBusy` after that many seconds."""
        zygote = self.zygote()
        exclusive = exclusive or capacity.times_gpu(job)  # the modes that time the GPU: capacity.TIMING_MODES
        gate = self.gate()
        alone = exclusive and self.exclusive_runs()
        ticket = gate.acquire(
            on_wait, owner=self.run_owner, exclusive=alone, idle_wait=idle_wait if alone else None
        )
        run_dir: Path | None = None
        try:
            run_dir = zygote.new_run_dir(cache=cache or self.cache_name)[0]
            for name, text in (files or {}).items():
                (run_dir / name).write_bytes(text.encode("utf-8", errors="surrogateescape"))
            original = Path(job["file"]) if source is not None and "file" in job else None
            if original is not None:
                copy = check_job.snapshot(run_dir, original, source or "")
                job = job | {"file": str(copy), "search_dir": str(original.parent)}
            (run_dir / "job.json").write_text(json.dumps(job))
            run = zygote.start(run_dir, default_limits(self.backend, timeout))
            if on_start:
                on_start(run)
            result = run.wait(on_output)
            data = read_json_object(run_dir / result_file)
            if original is not None:
                result.output = result.output.replace(str(copy), str(original))
                if data is not None:
                    data = json.loads(
                        json.dumps(data).replace(json.dumps(str(copy))[1:-1], json.dumps(str(original))[1:-1])
                    )
            return result, data
        finally:
            gate.release(ticket)
            if run_dir is not None:
                runfolder.remove_run_dir(run_dir)

    def inspect(
        self,
        exercise: Exercise,
        file: Path | None = None,
        target: str = "cuda:90",
        on_wait: Callable[[int], None] | None = None,
        timeout: float = 180.0,
    ) -> dict:
        """Compile the learner's kernel(s) for `target` (no GPU needed) in a sandboxed child and return the
        stages, resources, layouts and occupancy (grading/kernel_inspect.py)."""
        if target not in kernel_inspect.TARGETS:
            raise ValueError(f"unknown target {target!r}; known: {', '.join(kernel_inspect.TARGETS)}")
        path = Path(file) if file else self.learner_file(exercise)
        job = {
            "mode": "inspect",
            "exercise": exercise.id,
            "function": exercise.function,
            "file": str(path.resolve()),
            "target": target,
        }
        result, data = self.run_job(job, kernel_inspect.RESULT, on_wait=on_wait, timeout=timeout)
        if data is None:
            data = {
                "target": target,
                "kernels": [],
                **no_result("the inspect run", result),
                "output": result.output[-2000:],
            }
        return kernel_inspect.checked(data, target)

    def profile(
        self,
        exercise: Exercise,
        file: Path | None = None,
        on_wait: Callable[[int], None] | None = None,
        timeout: float = 300.0,
    ) -> dict:
        """`tritonlab profile`: on a GPU, the learner's kernel timed under Proton in a sandboxed child, with the
        rates against this GPU's measured roofs; without one, why nothing was timed. Both with the static view
        of `inspect` (cuda:90). The logic lives in profiling/report.py."""
        from tritonlab.perf import peaks
        from tritonlab.profiling import report

        path = Path(file) if file else self.learner_file(exercise)
        static = self.inspect(exercise, path, on_wait=on_wait)
        if self.backend != "gpu":
            return report.no_gpu(self.choice.reason, static)
        by_gpu = peaks.load_cache()
        job = report.job(exercise.id, exercise.function, path, by_gpu)
        # "profile" times the GPU: it runs alone (capacity.TIMING_MODES)
        result, data = self.run_job(job, report.RESULT, on_wait=on_wait, timeout=timeout)
        profile = report.checked(data)
        if data is None:
            profile["problems"].append(no_result("the profile run", result)["problems"][0])
        return report.with_rates(profile, by_gpu) | {"static": static}
