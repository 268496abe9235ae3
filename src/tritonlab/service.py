"""The one surface the CLI and the web server call: course, workspace, runs, checks, hints, progress.

A Service keeps one warm zygote per backend (started on first use) and a bounded number of concurrent runs:
one at a time on a GPU, a small pool on the interpreter. Waiting runs queue in arrival order.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tritonlab import config
from tritonlab.content.course import load_course
from tritonlab.grading import case_cache, contracts, grader, retry
from tritonlab.grading.kernel_inspect import FEATURE_LABELS as INSPECT_FEATURES
from tritonlab.grading.kernel_inspect import TARGETS as INSPECT_TARGETS
from tritonlab.models import Course, Exercise, Failure, Lesson, Verdict, pick
from tritonlab.perf import bench_learner
from tritonlab.profiling import report as profile_text
from tritonlab.runs import backend as backends
from tritonlab.runs import caches, hardening, pool, rundir, runfolder, sandbox
from tritonlab.runs import executor as executors
from tritonlab.runs.cgroups import proof
from tritonlab.runs.collect import Run, RunResult
from tritonlab.runs.limits import default_limits
from tritonlab.store.disk import DiskFull, is_full
from tritonlab.store.progress import Store
from tritonlab.store.workspace import MAX_SOURCE_BYTES, ConflictError, Workspace, WorkspaceError, locate

# What the interfaces may name from the layers below: the errors the service's methods raise, the limits they
# enforce, and the types they hand out. Interfaces import these from here, never from runs/ or store/.
BackendError = backends.BackendError
SandboxUnavailable = hardening.Unavailable
speed_line = bench_learner.speed_line  # the one-line speed report of a verdict, for the interfaces
profile_report = profile_text.format_report  # `profile`'s result as text, for the interfaces
ExecutorError = executors.ExecutorError
disk_is_full = is_full  # ENOSPC, EDQUOT, SQLite's "database or disk is full": for the CLI's last resort
__all__ = [
    "INSPECT_FEATURES",
    "MAX_SOURCE_BYTES",
    "BackendError",
    "ConflictError",
    "DiskFull",
    "ExecutorError",
    "Run",
    "SandboxUnavailable",
    "Service",
    "Store",
    "WorkspaceError",
    "disk_is_full",
    "open_store",
    "profile_report",
    "speed_line",
]


def open_store() -> Store:
    """The progress store of `TRITONLAB_HOME`, for commands that need no course (the terminal quiz)."""
    return Store()


INTERPRETER_POOL = 2


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


class FairGate:
    """A counting gate that admits waiters strictly in arrival order, and says where each one stands."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._cond = threading.Condition()
        self._active = 0
        self._queue: list[object] = []

    def position(self, ticket: object) -> int:
        with self._cond:
            return self._queue.index(ticket) + 1 if ticket in self._queue else 0

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)

    def acquire(self, on_wait: Callable[[int], None] | None = None) -> None:
        """Wait for a free slot. `on_wait(position)` is called while waiting; it may raise to give up the
        place in the queue (a run stopped before it started): the ticket leaves the queue at once."""
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            try:
                while self._queue[0] is not ticket or self._active >= self.size:
                    if on_wait:
                        on_wait(self._queue.index(ticket) + 1)
                    self._cond.wait(0.5)
            except BaseException:
                self._queue.remove(ticket)
                self._cond.notify_all()
                raise
            self._queue.pop(0)
            self._active += 1
            self._cond.notify_all()

    def release(self) -> None:
        with self._cond:
            self._active -= 1
            self._cond.notify_all()


def no_result(run: str, result: RunResult) -> dict:
    """The report of a sandboxed run that wrote none: how it ended."""
    why = "timed out" if result.timed_out else f"exit {result.exit_code}, signal {result.signal}"
    return {"problems": [f"{run} ended without a result ({why})"]}


class Service:
    def __init__(
        self,
        course_dir: Path | None = None,
        workspace_dir: Path | None = None,
        backend: str | None = None,
        lang: str | None = None,
        executor: str | None = None,
        allow_unhardened_workers: bool | None = None,
        remote_workers: int | None = None,
    ) -> None:
        self.executor = executors.choose(executor)  # "local" (this machine's zygote) or "ray" (a cluster)
        self._remote_options = executors.RemoteOptions.from_env(allow_unhardened_workers, remote_workers)
        self._remote: object | None = None
        self._remote_lock = threading.Lock()
        self.course: Course = load_course(course_dir)
        self.lang = config.language(lang)
        self.requested_backend = backend
        self._choice: backends.Choice | None = None
        self._store: Store | None = None
        self.workspace = Workspace(workspace_dir or locate(), self.course)
        self._zygotes: dict[str, sandbox.Zygote] = {}
        self._lock = threading.Lock()
        self._gates: dict[str, FairGate] = {}
        self.hardened: bool | None = None  # known once the worker started: is sandbox layer 2 active?
        self.hardened_reason = ""
        # The hardened sandbox shows runs this workspace read-only. A classroom keeps every learner's code in
        # its database instead and turns this off (`private_workspaces`), so runs see no shared workspace.
        self.sandbox_reads_workspace = True
        self.swept_runs = runfolder.sweep_stale_runs()  # run folders of a server that died (kill -9)
        # Seeds drawn ahead, with their cases made in the background (case_cache.py): on a GPU the next check
        # of an exercise finds its (large) cases ready.
        self._next_seed: dict[str, int] = {}
        # Told why, when a GPU worker starts without the hardened layer (auto could not verify CUDA inside
        # bubblewrap): the single-user CLI prints it; `serve` refuses to serve others instead (cli/serve.py).
        self.on_unhardened: Callable[[str], None] | None = None
        # Runs at once on this backend (None: one on a GPU, INTERPRETER_POOL on the interpreter); `dev check`
        # raises it to check the course's files side by side. The warm pool grows with it on a GPU.
        self.slots: int | None = None
        # Whether the next seed's cases are made ahead (None: on a GPU). A one-shot command turns it off.
        self.prefetch_cases: bool | None = None
        # The Triton compile cache this learner's runs share (runs/caches.py); a classroom names one per learner.
        self.cache_name = caches.LEARNER

    # ---- infrastructure -----------------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store()
        return self._store

    @property
    def choice(self) -> backends.Choice:
        if self._choice is None:
            if self.executor == "local":
                self._choice = backends.choose(self.requested_backend)
            else:  # the cluster's workers decide what runs, not this machine
                self._choice = self.remote().choice
        return self._choice

    @property
    def backend(self) -> str:
        return self.choice.backend

    def remote(self):  # noqa: ANN201 - the executor's pool (ray_executor.driver.RayPool), imported only when chosen
        """The remote executor's worker pool, joined on first use (executor != local)."""
        with self._remote_lock:
            if self._remote is None:
                try:  # imported only when chosen: the CLI's start-up never imports ray
                    from tritonlab.runs.ray_executor import driver as ray_driver
                except ImportError as exc:
                    raise executors.ExecutorError(
                        f"--executor ray needs Ray on this machine ({exc}): `pip install 'tritonlab[ray]'`"
                    ) from None
                self._remote = ray_driver.RayPool(self.requested_backend, self._remote_options)
            return self._remote

    def zygote(self) -> sandbox.Zygote:
        if self.executor != "local":
            cluster = self.remote()
            cluster.wait_ready()  # its workers' self-checks say whether the sandbox is hardened
            self.hardened, self.hardened_reason = cluster.hardened, cluster.hardened_reason
            return cluster
        return self._local_zygote(self.backend)

    def _local_zygote(self, backend: str) -> sandbox.Zygote:
        with self._lock:
            z = self._zygotes.get(backend)
            if z is None or z.dead:
                if z is not None:
                    z.close()  # a worker that died: release what it held (its shared runs-folder mount)
                # Layer 2 when the machine allows it (TRITONLAB_SANDBOX=auto|hardened|basic; see hardening.py).
                early = self._hardened_beside_probe(backend)
                try:
                    self.hardened, self.hardened_reason = hardening.decide(backend)
                except hardening.Unavailable:
                    if early is not None:
                        early.close()
                    raise
                if early is not None and self.hardened:
                    self._zygotes[backend] = early
                    return early
                if early is not None:
                    early.close()  # the probe said no: nothing ever ran in it
                if not self.hardened and backend == "gpu" and self.on_unhardened is not None:
                    self.on_unhardened(
                        "WARNING: GPU runs use sandbox layer 1 only (your own code on your own machine is "
                        f"fine; do not run other people's code): {self.hardened_reason}"
                    )
                z = self._new_zygote(backend, bool(self.hardened))
                self._zygotes[backend] = z
            return z

    def _hardened_beside_probe(self, backend: str) -> sandbox.Zygote | None:
        """The first worker of a process: while the hardened layer's probe runs (a sandbox started, torch
        imported, on a GPU a kernel compiled and launched in it: seconds), start the hardened worker too, so
        that its imports overlap the probe. It is used only if the probe then proves the layer (the caller
        decides, and closes it otherwise); nothing runs in it before. None when the probe's answer is known
        already, or the layer is switched off or cannot start here."""
        if hardening.mode() == "basic" or hardening.probed(backend) is not None or not hardening.find_bwrap():
            return None
        probing = threading.Thread(target=hardening.probe, args=(backend,), name="sandbox-probe", daemon=True)
        probing.start()
        try:
            early = self._new_zygote(backend, hardened=True)
        except (hardening.Unavailable, sandbox.SandboxError, OSError):
            early = None
        probing.join()
        return early

    def _new_zygote(self, backend: str, hardened: bool) -> sandbox.Zygote:
        # every run directory comes from the zygote (Zygote.new_run_dir): warm children under the hardened
        # layer too, each bound ahead to a run's directory and compile cache (pool.BoundPool)
        return sandbox.Zygote(
            backend,
            hardened=hardened,
            read_only=(self.workspace.root,) if self.sandbox_reads_workspace else (),
            hidden=tuple(e.solution for e in self.course.exercises()),
            pool=pool.wanted(backend, hardened, self.slots or 1, bound=True),
        )

    def private_workspaces(self) -> None:
        """Classroom mode: runs read no shared workspace folder (each learner's file is copied into their own
        run directory). A local worker already started with the folder bound is replaced."""
        if not self.sandbox_reads_workspace:
            return
        self.sandbox_reads_workspace = False
        with self._lock:
            started, self._zygotes = list(self._zygotes.values()), {}
        for zygote in started:
            zygote.close()

    def run_limits(self) -> dict:
        """Per-run cgroups: whether runs get them, and which limits a probe saw stop something."""
        zygote = self._zygotes.get(self.backend)
        report = proof.report(bool(zygote.hardened) if zygote is not None else bool(self.hardened))
        if zygote is not None and not zygote.run_cgroups:  # the worker started without them
            report = report | {
                "per_run_cgroups": False,
                "memory_limit": False,
                "complete": False,
                "active": [],
                "reason": "the worker places runs in no cgroup",
            }
        return report

    def warm_up(self) -> None:
        """Start the worker now (in the background), so the first run does not wait for imports. When the GPU
        was asked for by name and its probe is not answered yet (a subprocess creating a CUDA context: seconds),
        the probe runs in a thread while the GPU worker starts — and, on a process's first worker, while the
        sandbox's own probe runs (hardening.py: a kernel launched inside bubblewrap, seconds too; the two ran
        one after the other before, most of a first check's start on the H200). A probe that finds no usable
        GPU raises BackendError as before, and the worker started for nothing is closed."""
        wanted = (self.requested_backend or config.default_backend()).lower()
        if self.executor == "local" and self._choice is None and wanted == "gpu":
            answer: dict[str, BaseException] = {}

            def probe_gpu() -> None:
                try:
                    _ = self.choice
                except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread below
                    answer["error"] = exc

            probing = threading.Thread(target=probe_gpu, name="gpu-probe", daemon=True)
            probing.start()
            try:
                early = self._local_zygote("gpu")
            finally:
                probing.join()
            if "error" in answer:
                with self._lock:
                    self._zygotes.pop("gpu", None)
                early.close()
                raise answer["error"]
        self.zygote()

    def gate(self) -> FairGate:
        with self._lock:
            if self.backend not in self._gates:
                if self.executor != "local":  # one run per cluster worker; lost workers shrink it
                    gate = FairGate(max(1, self._remote.capacity))
                    self._remote.on_capacity = lambda n: setattr(gate, "size", max(1, n))
                else:
                    gate = FairGate(self.slots or (1 if self.backend == "gpu" else INTERPRETER_POOL))
                self._gates[self.backend] = gate
            return self._gates[self.backend]

    def close(self) -> None:
        with self._lock:
            for z in self._zygotes.values():
                z.close()
            self._zygotes.clear()
            if self._remote is not None:
                self._remote.close()

    # ---- course -------------------------------------------------------------------------------------------

    def lesson(self, key: str | int) -> Lesson:
        return self.course.lesson(key)

    def exercise(self, exercise_id: str) -> Exercise:
        return self.course.exercise(exercise_id)

    def lesson_markdown(self, lesson: Lesson) -> tuple[str, bool]:
        """(markdown, is_fallback): the lesson in the learner's language, else English."""
        path = lesson.text_path(self.lang)
        fallback = not path.name.endswith(f".{self.lang}.md")
        return path.read_text(encoding="utf-8"), fallback

    def title(self, lesson: Lesson) -> str:
        return pick(lesson.title, self.lang)

    # ---- the learner's code -------------------------------------------------------------------------------

    def learner_file(self, exercise: Exercise, start: Path | None = None) -> Path:
        """The learner's copy of the exercise, in this service's workspace, or in the workspace of the folder
        `start` (the check daemon serves commands run from any folder)."""
        workspace = self.workspace if start is None else Workspace(locate(start), self.course)
        return workspace.ensure(exercise)

    def read_code(self, exercise: Exercise) -> tuple[str, str]:
        return self.workspace.read(exercise)

    def save_code(self, exercise: Exercise, text: str, base_version: str | None, force: bool = False) -> str:
        return self.workspace.save(exercise, text, base_version, force)

    def init_workspace(self) -> list[Path]:
        """Create the learner's starter files that are missing; returns the files created."""
        return self.workspace.init()

    def reset(self, exercise: Exercise) -> Path | None:
        return self.workspace.reset(exercise)

    # ---- runs and checks ----------------------------------------------------------------------------------

    def check(
        self,
        exercise: Exercise,
        file: Path | None = None,
        seed: int | None = None,
        on_output: Callable[[str], None] | None = None,
        record: bool = True,
        on_start: Callable[[Run], None] | None = None,
        on_wait: Callable[[int], None] | None = None,
        timeout: float = 120.0,
        text: str | None = None,
        speed: bool = True,
        on_verdict: Callable[[Verdict], None] | None = None,
        huge: bool = False,
    ) -> Verdict:
        """Grade `text` when given (the text a request sent), else the file's text as it is now — read before
        waiting in the queue, so a later save never changes what this check grades. On a GPU a passing file
        is then timed once (`verdict.speed`, never graded); `on_verdict` gets the verdict before that timing run,
        so an interface can show it at once and the speed line after. With `record`, the attempt is saved
        before `on_verdict` sees it (nothing is shown that is not saved: a timing run that fails, or a server
        killed while it waits, loses no attempt) and the speed is added to that saved attempt afterwards.
        `huge`: the cases past 2³¹ elements (a GPU only)."""
        if huge and self.backend != "gpu":
            raise ValueError(
                f"huge cases (≥ 2³¹ elements) run on a GPU only, not on the {self.backend} backend"
            )
        began = time.monotonic()
        target = Path(file) if file else self.learner_file(exercise)
        source = text if text is not None else grader.read_source(target)
        zygote = self.zygote()
        if seed is None:
            with self._lock:
                seed = self._next_seed.pop(exercise.id, None)
        if seed is None:
            seed = random.SystemRandom().randrange(1, 2**31)
        gate = self.gate()
        handles: list = []

        def started(run: Run) -> None:
            handles.append(run)
            if on_start:
                on_start(run)

        ahead: list[threading.Thread] = []

        def waiting(position: int) -> None:
            # Next in line: make this check's cases now (case_cache, one maker per seed), so the worker that
            # frees up never waits for the parent's NumPy. Only the head of the queue: memory stays bounded.
            if position == 1 and not ahead and case_cache.CASES.budget > 0:
                ahead.append(self._make_cases_soon(exercise, seed))
            if on_wait:
                on_wait(position)

        asked = time.monotonic()
        gate.acquire(waiting)
        queued = time.monotonic() - asked
        try:
            verdict = retry.check_retrying(  # graded again, once, when the harness died under it
                lambda worker: grader.check(
                    exercise,
                    target.resolve(),
                    self.backend,
                    worker,
                    seed=seed,
                    on_output=on_output,
                    on_start=started,
                    timeout=timeout,
                    source=source,
                    huge_cases=huge,
                    cache=self.cache_name,
                ),
                self.zygote,
                first=zygote,
            )
        except executors.WorkerLost as lost:
            return self._lost_verdict(exercise, target, seed, lost)
        finally:
            gate.release()
        verdict.executor = self.executor
        verdict.node = getattr(handles[0], "node", "") if handles else ""
        verdict.node = verdict.node or executors.this_node()
        verdict.timings = {"queue_wait_s": queued, "cases_ahead": bool(ahead)} | verdict.timings
        verdict.speed_reason = self._no_speed(verdict, speed)
        verdict.timings["total_s"] = time.monotonic() - began
        attempt = None
        if record:  # saved first, then shown
            attempt = self.store.record_attempt(verdict.to_json())
            self.store.set_state("last_exercise", exercise.id)
        if on_verdict:
            on_verdict(verdict)
        self.prepare_cases(exercise)  # the next seed's cases are made while this one is timed
        if not verdict.speed_reason:
            mark = time.monotonic()
            self._add_speed(verdict, exercise, target, source, on_wait)
            verdict.timings["speed_s"] = time.monotonic() - mark
            verdict.timings["total_s"] = time.monotonic() - began
            if attempt is not None:
                self.store.add_speed(attempt, verdict.to_json())
        return verdict

    def _make_cases_soon(self, exercise: Exercise, seed: int) -> threading.Thread:
        """Make (and cache) the cases of (exercise, seed) in a background thread."""
        backend = self.backend

        def make() -> None:
            contract = contracts.get(exercise.id)
            cases = case_cache.CASES.get(
                (exercise.id, backend, seed), lambda: grader.make_cases(contract, seed, backend)
            )
            grader.prepare_references(contract, cases)  # the judge then only compares

        thread = threading.Thread(target=make, name=f"cases-{exercise.id}", daemon=True)
        thread.start()
        return thread

    def prepare_cases(self, exercise: Exercise) -> None:
        """Draw the seed of this exercise's next check now and make its cases in a background thread."""
        wanted = self.prefetch_cases if self.prefetch_cases is not None else self.backend == "gpu"
        if not wanted:
            return
        with self._lock:
            if exercise.id in self._next_seed:
                return
            seed = random.SystemRandom().randrange(1, 2**31)
            self._next_seed[exercise.id] = seed
        self._make_cases_soon(exercise, seed)

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
        data = self.speed_runs(job, exercise, source, on_wait)
        verdict.speed = bench_learner.speed_summary(data, exercise.speed_goal)

    def speed_runs(self, job: dict, exercise: Exercise, source: str, on_wait: Callable | None = None) -> dict:
        """The two runs of perf/speed.py for a speed job (bench_learner.speed_job): the learner's module records
        one call, a trusted child replays and times it. Their report: {"rows": [...], "problems": [...]}."""
        from tritonlab.perf import speed

        # 1. the learner's module, one recorded call on the representative size (nothing timed there)
        result, data = self.run_job(job, speed.RECORD_RESULT, on_wait=on_wait, timeout=120.0, source=source)
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
            result, data = self.run_job(
                timing,
                speed.SPEED_RESULT,
                on_wait=on_wait,
                timeout=120.0,
                cache=caches.REPLAY,
                files={"source.py": source},
            )
            if data is None:
                data = no_result("the timing run", result)
        else:
            data = {
                "problems": data.get("problems") or ["your kernel could not be recorded on the speed case"]
            }
        return data

    def _lost_verdict(
        self, exercise: Exercise, target: Path, seed: int | None, lost: executors.WorkerLost
    ) -> Verdict:
        """A check whose remote worker died (and so did the retry): nothing was graded, nothing recorded."""
        verdict = Verdict(
            exercise=exercise.id,
            backend=self.backend,
            seed=int(seed or 0),
            file=str(target),
            executor=self.executor,
            node="; ".join(lost.nodes),
        )
        verdict.failures.append(
            Failure(
                "(none)",
                "worker-lost",
                f"worker lost, nothing was graded: {lost}",
                "not your code: what runs checks went away (a machine of the course's cluster, or this "
                "server's sandbox worker). Check again.",
            )
        )
        return verdict

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
        source = text if text is not None else grader.read_source(path)
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
    ) -> tuple[RunResult, dict | None]:
        """Run one harness job in a sandboxed child, queued through the gate; return the run and the JSON the
        child wrote to `result_file` (None when it wrote none, or something that is not a JSON object).
        With `source`, the child runs that text (a snapshot in the run directory named like `job["file"]`).
        `cache`: the compile cache (default the learner's; the replay's only for a trusted mode, which the
        zygote enforces); `files`: texts written into the run directory first (name -> text)."""
        zygote = self.zygote()
        gate = self.gate()
        gate.acquire(on_wait)
        run_dir = zygote.new_run_dir(cache=cache or self.cache_name)[0]
        try:
            for name, text in (files or {}).items():
                (run_dir / name).write_bytes(text.encode("utf-8", errors="surrogateescape"))
            original = Path(job["file"]) if source is not None and "file" in job else None
            if original is not None:
                copy = grader.snapshot(run_dir, original, source or "")
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
            gate.release()
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
        from tritonlab.grading import kernel_inspect

        if target not in INSPECT_TARGETS:
            raise ValueError(f"unknown target {target!r}; known: {', '.join(INSPECT_TARGETS)}")
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
        result, data = self.run_job(job, report.RESULT, on_wait=on_wait, timeout=timeout)
        profile = report.checked(data)
        if data is None:
            profile["problems"].append(no_result("the profile run", result)["problems"][0])
        return report.with_rates(profile, by_gpu) | {"static": static}

    # ---- hints and progress -------------------------------------------------------------------------------

    def next_hint(self, exercise: Exercise) -> tuple[int, int, str] | None:
        """(number, total, text) of the next hint not yet shown, else None when all were shown."""
        hints = exercise.hint_list(self.lang)
        shown = self.store.hints_shown(exercise.id)
        if shown >= len(hints):
            return None
        self.store.record_hint(exercise.id, shown)
        return shown + 1, len(hints), hints[shown]

    def hints_so_far(self, exercise: Exercise) -> list[str]:
        return list(exercise.hint_list(self.lang)[: self.store.hints_shown(exercise.id)])

    def current_exercise(self) -> Exercise | None:
        """The first exercise, in course order, that has not been passed."""
        passed = self.store.passed_exercises()
        for exercise in self.course.exercises():
            if exercise.id not in passed:
                return exercise
        return None

    def progress(self) -> dict:
        passed = self.store.passed_exercises()
        quizzes = self.store.best_quiz()
        attempts = self.store.attempts()
        lessons = []
        for lesson in self.course.lessons:
            quiz = quizzes.get(lesson.id)
            lessons.append(
                {
                    "id": lesson.id,
                    "number": lesson.number,
                    "title": self.title(lesson),
                    "exercises": [
                        {
                            "id": ex.id,
                            "passed": ex.id in passed,
                            "attempts": sum(1 for a in attempts if a["exercise"] == ex.id),
                        }
                        for ex in lesson.exercises
                    ],
                    "quiz": quiz,
                }
            )
        total = len(self.course.exercises())
        current = self.current_exercise()
        return {
            "exercises_passed": len(passed & {e.id for e in self.course.exercises()}),
            "exercises_total": total,
            "quizzes_passed": sum(1 for q in quizzes.values() if q["passed"]),
            "attempts": len(attempts),
            "current_exercise": current.id if current else None,
            "last_exercise": self.store.get_state("last_exercise"),
            "lessons": lessons,
        }
