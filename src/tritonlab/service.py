"""The one surface the CLI and the web server call: course, workspace, runs, checks, hints, progress.

A Service keeps one warm zygote per backend (started on first use) and a bounded number of concurrent runs:
one at a time on a GPU, a small pool on the interpreter. Waiting runs queue in arrival order.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from tritonlab import config
from tritonlab.content.course import load_course
from tritonlab.grading import grader
from tritonlab.models import Course, Exercise, Failure, Lesson, Verdict, pick
from tritonlab.runs import backend as backends
from tritonlab.runs import executor as executors
from tritonlab.runs import hardening, sandbox
from tritonlab.store.progress import Store
from tritonlab.store.workspace import MAX_SOURCE_BYTES, ConflictError, Workspace, WorkspaceError, locate

# What the interfaces may name from the layers below: the errors the service's methods raise, the limits they
# enforce, and the types they hand out. Interfaces import these from here, never from runs/ or store/.
BackendError = backends.BackendError
SandboxUnavailable = hardening.Unavailable
Run = sandbox.Run
ExecutorError = executors.ExecutorError
__all__ = [
    "MAX_SOURCE_BYTES",
    "BackendError",
    "ConflictError",
    "ExecutorError",
    "Run",
    "SandboxUnavailable",
    "Service",
    "Store",
    "WorkspaceError",
    "open_store",
]


def open_store() -> Store:
    """The progress store of `TRITONLAB_HOME`, for commands that need no course (the terminal quiz)."""
    return Store()


INTERPRETER_POOL = 2


def read_json_object(path: Path) -> dict | None:
    """A JSON object the child wrote, or None: a run can leave anything in its folder (the run dir is
    sanitized by Run.wait, so no links or FIFOs; the content is still the learner's to spoil)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


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
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            while self._queue[0] is not ticket or self._active >= self.size:
                if on_wait:
                    on_wait(self._queue.index(ticket) + 1)
                self._cond.wait(0.5)
            self._queue.pop(0)
            self._active += 1
            self._cond.notify_all()

    def release(self) -> None:
        with self._cond:
            self._active -= 1
            self._cond.notify_all()


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

    def remote(self):  # noqa: ANN201 - the executor's pool (ray_executor.RayPool), imported only when chosen
        """The remote executor's worker pool, joined on first use (executor != local)."""
        with self._remote_lock:
            if self._remote is None:
                try:  # imported only when chosen: the CLI's start-up never imports ray
                    from tritonlab.runs import ray_executor
                except ImportError as exc:
                    raise executors.ExecutorError(
                        f"--executor ray needs Ray on this machine ({exc}): `pip install 'tritonlab[ray]'`"
                    ) from None
                self._remote = ray_executor.RayPool(self.requested_backend, self._remote_options)
            return self._remote

    def zygote(self) -> sandbox.Zygote:
        if self.executor != "local":
            pool = self.remote()
            pool.wait_ready()  # its workers' self-checks say whether the sandbox is hardened
            self.hardened, self.hardened_reason = pool.hardened, pool.hardened_reason
            return pool
        with self._lock:
            z = self._zygotes.get(self.backend)
            if z is None or z.dead:
                # Layer 2 when the machine allows it (TRITONLAB_SANDBOX=auto|hardened|basic; see hardening.py).
                self.hardened, self.hardened_reason = hardening.decide(self.backend)
                z = sandbox.Zygote(self.backend, hardened=self.hardened, read_only=(self.workspace.root,))
                self._zygotes[self.backend] = z
            return z

    def warm_up(self) -> None:
        """Start the worker now (in the background), so the first run does not wait for imports."""
        self.zygote()

    def gate(self) -> FairGate:
        with self._lock:
            if self.backend not in self._gates:
                if self.executor != "local":  # one run per cluster worker; lost workers shrink it
                    gate = FairGate(max(1, self._remote.capacity))
                    self._remote.on_capacity = lambda n: setattr(gate, "size", max(1, n))
                else:
                    gate = FairGate(1 if self.backend == "gpu" else INTERPRETER_POOL)
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

    def learner_file(self, exercise: Exercise) -> Path:
        return self.workspace.ensure(exercise)

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
        on_start: Callable[[sandbox.Run], None] | None = None,
        on_wait: Callable[[int], None] | None = None,
        timeout: float = 120.0,
    ) -> Verdict:
        target = Path(file) if file else self.learner_file(exercise)
        zygote = self.zygote()
        gate = self.gate()
        handles: list = []

        def started(run: sandbox.Run) -> None:
            handles.append(run)
            if on_start:
                on_start(run)

        gate.acquire(on_wait)
        try:
            verdict = grader.check(
                exercise,
                target.resolve(),
                self.backend,
                zygote,
                seed=seed,
                on_output=on_output,
                on_start=started,
                timeout=timeout,
            )
        except executors.WorkerLost as lost:
            return self._lost_verdict(exercise, target, seed, lost)
        finally:
            gate.release()
        verdict.executor = self.executor
        verdict.node = getattr(handles[0], "node", "") if handles else ""
        verdict.node = verdict.node or executors.this_node()
        if record:
            self.store.record_attempt(verdict.to_json())
            self.store.set_state("last_exercise", exercise.id)
        return verdict

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
                "not your code: a machine of the course's cluster went away. Check again.",
            )
        )
        return verdict

    def run_file(
        self,
        file: Path,
        on_output: Callable[[str], None] | None = None,
        on_start: Callable[[sandbox.Run], None] | None = None,
        on_wait: Callable[[int], None] | None = None,
        timeout: float = 60.0,
        argv: list[str] | None = None,
    ) -> tuple[sandbox.RunResult, dict | None]:
        """Run a learner program as __main__ in a sandboxed child. Returns the result and its error, if any."""
        job = {"mode": "run", "file": str(Path(file).resolve()), "argv": argv or []}
        return self.run_job(
            job, "error.json", on_output=on_output, on_start=on_start, on_wait=on_wait, timeout=timeout
        )

    def run_job(
        self,
        job: dict,
        result_file: str,
        on_output: Callable[[str], None] | None = None,
        on_start: Callable[[sandbox.Run], None] | None = None,
        on_wait: Callable[[int], None] | None = None,
        timeout: float = 60.0,
    ) -> tuple[sandbox.RunResult, dict | None]:
        """Run one harness job in a sandboxed child, queued through the gate; return the run and the JSON the
        child wrote to `result_file` (None when it wrote none, or something that is not a JSON object)."""
        zygote = self.zygote()
        gate = self.gate()
        gate.acquire(on_wait)
        run_dir = sandbox.new_run_dir()
        try:
            (run_dir / "job.json").write_text(json.dumps(job))
            run = zygote.start(run_dir, sandbox.default_limits(self.backend, timeout))
            if on_start:
                on_start(run)
            result = run.wait(on_output)
            return result, read_json_object(run_dir / result_file)
        finally:
            gate.release()
            sandbox.remove_run_dir(run_dir)

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
