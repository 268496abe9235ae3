"""`Service`: the methods the CLI, the web server and the notebook call (the package face re-exports it).

It holds what one learner's session shares: the course, the workspace, the progress store, the workers (workers.py)
and their fair gates (gate.py). Its methods are the façade; the work is in the modules named after it: a check is
`ServiceCheckRun` (check.py, the grading pipeline with the service's record, show and speed steps), other runs
are jobs.py, the speed runs speed.py, hints and progress progress.py.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tritonlab import config
from tritonlab.content.course import load_course
from tritonlab.grading import contracts
from tritonlab.grading.check import cases as check_cases
from tritonlab.grading.check import job as check_job
from tritonlab.models import Course, Exercise, Failure, Lesson, Verdict, pick
from tritonlab.runs import backend as backends
from tritonlab.runs import caches, capacity, runfolder, sandbox
from tritonlab.runs import executor as executors
from tritonlab.runs.collect import Run
from tritonlab.service.ahead import AheadCompiles
from tritonlab.service.check import ServiceCheckRun
from tritonlab.service.gate import FairGate
from tritonlab.service.jobs import Jobs
from tritonlab.service.progress import Progress
from tritonlab.service.speed import Speed
from tritonlab.service.workers import Workers
from tritonlab.store.progress import Store
from tritonlab.store.workspace import Workspace, locate


class Service(Workers, Jobs, Speed, Progress):
    """One learner's session over the course: see the module docstring; the interfaces call only these methods
    (and those of its mixins: Workers, Jobs, Speed, Progress)."""

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
        capacity.forced()  # a malformed TRITONLAB_SLOTS stops the service here, with the reason (SlotsError)
        self._remote_options = executors.RemoteOptions.from_env(allow_unhardened_workers, remote_workers)
        self._remote: object | None = None
        self._remote_lock = threading.Lock()
        self.course: Course = load_course(course_dir)
        self.lang = config.language(lang)
        self.requested_backend = backend
        self._choice: backends.Choice | None = None
        self._store: Store | None = None
        self._store_lock = threading.Lock()
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
        # Runs at once on this backend (None: what the machine has room for, runs/capacity.py; TRITONLAB_SLOTS
        # overrides); `dev check --jobs` sets it to check the course's files side by side. The warm pool follows.
        self.slots: int | None = None
        # Whose runs these are, for the run queue's one-slot-per-owner rule (gate.py): None for one user's
        # session (its runs are not limited that way); a classroom's LearnerService names its learner.
        self.run_owner: object = None
        # Whether the next seed's cases are made ahead (None: on a GPU). A one-shot command turns it off.
        self.prefetch_cases: bool | None = None
        # The Triton compile cache this learner's runs share (runs/caches.py); a classroom names one per learner.
        self.cache_name = caches.LEARNER
        # A saved text's kernels compiled before its check (ahead.py); a classroom's learners share the base's.
        self.ahead = AheadCompiles()

    @property
    def store(self) -> Store:
        if self._store is None:
            # two checks finishing at once on a fresh server made two stores (a migration race)
            with self._store_lock:
                if self._store is None:
                    self._store = Store()
        return self._store

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
        """Save the learner's text (a conflict raises); on a GPU its kernels then compile ahead of the check
        (ahead.py), in a free slot only: the save itself never waits for that."""
        version = self.workspace.save(exercise, text, base_version, force)
        self.ahead.saved(self, exercise, text)
        return version

    def init_workspace(self) -> list[Path]:
        """Create the learner's starter files that are missing; returns the files created."""
        return self.workspace.init()

    def reset(self, exercise: Exercise) -> Path | None:
        return self.workspace.reset(exercise)

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
        cache_key: str | None = None,
    ) -> Verdict:
        """Grade `text` when given (the text a request sent), else the file's text as it is now — read before
        waiting in the queue, so a later save never changes what this check grades. On a GPU a passing file
        is then timed once (`verdict.speed`, never graded); `on_verdict` gets the verdict before that timing run,
        so an interface can show it at once and the speed line after. With `record`, the attempt is saved
        before `on_verdict` sees it (nothing is shown that is not saved: a timing run that fails, or a server
        killed while it waits, loses no attempt) and the speed is added to that saved attempt afterwards.
        `huge`: the cases past 2³¹ elements (a GPU only). `cache_key`: this check's runs use the compile cache
        of that key (runs/caches.py `learner_name`) instead of the service's (`dev check`: one per exercise)."""
        if huge and self.backend != "gpu":
            raise ValueError(
                f"huge cases (≥ 2³¹ elements) run on a GPU only, not on the {self.backend} backend"
            )
        began = time.monotonic()
        cache = caches.learner_name(cache_key) if cache_key else self.cache_name
        self.ahead.stop(cache, exercise.id)  # this check compiles what the compile ahead had not
        target = Path(file) if file else self.learner_file(exercise)
        source = text if text is not None else check_job.read_source(target)
        zygote = self.zygote()
        if seed is None and self.executor == "local":  # a cluster worker draws it (remote_check.py)
            with self._lock:
                seed = self._next_seed.pop(exercise.id, None)
            if seed is None:
                seed = random.SystemRandom().randrange(1, 2**31)
        run = ServiceCheckRun(
            self,
            exercise,
            target,
            source,
            zygote,
            seed,
            began=began,
            record=record,
            speed=speed,
            timeout=timeout,
            huge=huge,
            on_output=on_output,
            on_start=on_start,
            on_wait=on_wait,
            on_verdict=on_verdict,
            cache=cache,
        )
        # the saved text's kernels were compiled ahead into both caches: no second precompile to find them
        run.compiled_ahead = self.ahead.compiled(cache, exercise.id, source)
        return run()

    def _make_cases_soon(self, exercise: Exercise, seed: int) -> threading.Thread:
        """Make (and cache) the cases of (exercise, seed) in a background thread."""
        backend = self.backend

        def make() -> None:
            contract = contracts.get(exercise.id)
            cases = check_cases.cases(contract, exercise.id, backend, seed)
            check_cases.prepare_references(contract, cases)  # the judge then only compares

        thread = threading.Thread(target=make, name=f"cases-{exercise.id}", daemon=True)
        thread.start()
        return thread

    def prepare_cases(self, exercise: Exercise) -> None:
        """Draw the seed of this exercise's next check now and make its cases in a background thread."""
        wanted = self.prefetch_cases if self.prefetch_cases is not None else self.backend == "gpu"
        if not wanted or self.executor != "local":  # a cluster worker makes a check's cases from its seed
            return
        with self._lock:
            if exercise.id in self._next_seed:
                return
            seed = random.SystemRandom().randrange(1, 2**31)
            self._next_seed[exercise.id] = seed
        self._make_cases_soon(exercise, seed)

    def _lost_verdict(
        self, exercise: Exercise, target: Path, seed: int | None, lost: executors.WorkerLost
    ) -> Verdict:
        """A check whose harness or remote worker died (and so did the retry): nothing graded, nothing recorded."""
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
