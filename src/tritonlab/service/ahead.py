"""Compiling ahead when the learner saves (issue 40): the first check of edited code starts with its kernels
already compiled.

On a GPU the cost of a check of edited code is its compiles (grading/check/precompile.py takes the replay's off
the critical path). The web editor saves the text a moment after each pause in typing; a learner presses Check
seconds later. So when a save arrives, `AheadCompiles.saved` waits DEBOUNCE_S for the typing to settle, then
compiles the saved text's kernels in the variants the learner's previous check of this exercise launched (the
stored ones, check/precompile.py's VariantStore), through the same trusted precompile a check starts before
its check child: one child compiles into the replay's cache, and what it compiled is copied into the learner's
own cache (runs/caches.py `copy_entries`: one compile for both). The check that follows finds them compiled
(and starts no precompile of its own).

It never costs anyone a check: it runs in a background slot of the run queue (service/gate.py: taken only when
one is free and nobody waits, one per learner, stopped as soon as any run has to wait), a newer save of the
exercise stops the older compile, and the learner's own check stops it (what was compiled stays compiled).
Nothing here decides a verdict: the children never import the learner's file, and what they leave is what the
check's own precompile would leave. It runs where checks compile on this machine: the local executor, on a GPU
(or for the compile target tests set, check/pipeline.py `precompile_target`); a Ray cluster's workers compile
their own.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tritonlab.grading import contracts
from tritonlab.grading.check import pipeline
from tritonlab.grading.check import precompile as check_precompile

if TYPE_CHECKING:
    from tritonlab.models import Exercise

Service = Any  # the facade's Service or a classroom's LearnerService (facade.py imports this module)

DEBOUNCE_S = 1.0  # the saves of one burst of typing start one compile, this long after the last
LIMIT_S = 60.0  # the longest one compile ahead may take before it is stopped
KEEP = 256  # the outcomes kept (per learner cache and exercise) for `outcome`


@dataclass(eq=False)
class _Job:
    key: tuple[str, str]  # (the learner's compile cache, the exercise)
    text: str
    due: float
    stop: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    compiling: check_precompile.PrecompileAndCopy | None = None


class AheadCompiles:
    """The compiles ahead of one server (shared by every learner's service: see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[tuple[str, str], _Job] = {}
        self._outcomes: OrderedDict[tuple[str, str], dict] = OrderedDict()

    # ---- what the service calls ---------------------------------------------------------------------------

    def saved(self, service: Service, exercise: Exercise, text: str) -> str:
        """A save of `text`: schedule its compile ahead; why not, when it is not ("" when scheduled)."""
        why = self._why_not(service, exercise)
        if why:
            return why
        key = (service.cache_name, exercise.id)
        with self._lock:
            old = self._jobs.get(key)
            if old is not None and not old.done.is_set():
                settling = old.compiling is None and not old.stop.is_set()
                if settling:  # the typing has not settled: this newer text is compiled instead, later
                    old.text, old.due = text, time.monotonic() + DEBOUNCE_S
                    return ""
                old.stop.set()  # compiling an older text: stopped (by its thread), the newer one follows
            job = _Job(key, text, time.monotonic() + DEBOUNCE_S)
            self._jobs[key] = job
        thread = threading.Thread(
            target=self._run, args=(service, exercise, job), name=f"ahead-{exercise.id}", daemon=True
        )
        thread.start()
        return ""

    def stop(self, cache: str, exercise_id: str) -> None:
        """The learner's check of the exercise begins: their compile ahead (if any) stops; what it compiled
        stays in the caches, and the check's own precompile compiles the rest."""
        with self._lock:
            job = self._jobs.get((cache, exercise_id))
        if job is not None:
            job.stop.set()  # its thread stops the children within a fifth of a second

    def compiled(self, cache: str, exercise_id: str, text: str) -> bool:
        """Whether the last compile ahead of (cache, exercise) compiled exactly `text` and ended: its kernels
        are then in both caches, and a check of that text need not start a precompile to find them again (a
        kernel that is not, e.g. a cache emptied since, is compiled by the child that launches it)."""
        with self._lock:
            job = self._jobs.get((cache, exercise_id))
            if job is not None and not job.done.is_set():
                return False
            found = self._outcomes.get((cache, exercise_id))
        return bool(found) and found.get("status") == "compiled" and found.get("text") == _digest(text)

    def wait(self, cache: str, exercise_id: str, timeout: float) -> dict | None:
        """Wait for the compile ahead of (cache, exercise) to end; its outcome (None: none was scheduled)."""
        with self._lock:
            job = self._jobs.get((cache, exercise_id))
        if job is not None:
            job.done.wait(timeout)
        return self.outcome(cache, exercise_id)

    def outcome(self, cache: str, exercise_id: str) -> dict | None:
        """The last compile ahead's outcome: {"status": "compiled" | "stopped" | "no-slot" | "no-variants" |
        "failed", "text": its text's sha256, "seconds", the precompile's report and the entries copied}."""
        with self._lock:
            found = self._outcomes.get((cache, exercise_id))
            return dict(found) if found is not None else None

    # ---- the work -----------------------------------------------------------------------------------------

    @staticmethod
    def _why_not(service: Service, exercise: Exercise) -> str:
        if service.executor != "local":
            return "the cluster's workers compile their own"
        try:
            contract = contracts.get(exercise.id)
        except KeyError:
            return "no contract for this exercise"
        return check_precompile.why_not(contract, service.backend, pipeline.CheckRun.precompile_target)

    def _run(self, service: Service, exercise: Exercise, job: _Job) -> None:
        outcome: dict = {"status": "stopped"}
        ticket = None
        gate = None
        began = time.monotonic()
        try:
            while not job.stop.is_set():  # the typing settles: each newer save moved `due` on
                with self._lock:
                    left = job.due - time.monotonic()
                if left <= 0:
                    break
                job.stop.wait(left)
            if job.stop.is_set():
                return
            wanted = check_precompile.VariantStore().load(job.key[0], exercise.id)
            if not wanted:
                outcome = {"status": "no-variants"}  # the learner's first check of it keeps them
                return
            gate = service.gate()
            ticket = gate.try_background(service.run_owner, preempt=job.stop.set)
            if ticket is None:
                outcome = {"status": "no-slot"}  # the run queue is busy: the check will compile
                return
            with self._lock:
                text = job.text
                if job.stop.is_set():
                    return
                began = time.monotonic()
                job.compiling = check_precompile.PrecompileAndCopy(
                    service.zygote(),
                    text,
                    service.learner_file(exercise),
                    wanted,
                    service.backend,
                    LIMIT_S,
                    pipeline.CheckRun.precompile_target,
                    job.key[0],
                )
            outcome = self._finish(job, text)
        except Exception as exc:  # noqa: BLE001 - a compile ahead decides nothing; the check compiles
            outcome = {"status": "failed", "problem": f"{type(exc).__name__}: {str(exc)[:200]}"}
        finally:
            if gate is not None and ticket is not None:
                gate.release(ticket)
            outcome["seconds"] = round(time.monotonic() - began, 3)
            self._ended(job, outcome)

    def _finish(self, job: _Job, text: str) -> dict:
        """Wait for the precompile and its copy, stopping it when the job is stopped (a newer save, the
        learner's check, a queued run: `preempt`) or past LIMIT_S; its report."""
        compiling = job.compiling
        assert compiling is not None
        deadline = time.monotonic() + LIMIT_S
        while compiling.thread.is_alive():
            if job.stop.is_set() or time.monotonic() >= deadline:
                compiling.stop()
                return {"status": "stopped", "text": _digest(text)}
            compiling.thread.join(0.2)
        if compiling.problem or compiling.replay is None:
            return {"status": "failed", "problem": compiling.problem}
        return {"status": "compiled", "text": _digest(text), "replay": dict(compiling.replay.report),
                "copied": compiling.copied}  # fmt: skip

    def _ended(self, job: _Job, outcome: dict) -> None:
        with self._lock:
            if "text" not in outcome:
                outcome["text"] = _digest(job.text)
            self._outcomes[job.key] = outcome
            self._outcomes.move_to_end(job.key)
            while len(self._outcomes) > KEEP:
                self._outcomes.popitem(last=False)
            if self._jobs.get(job.key) is job:
                del self._jobs[job.key]
            job.done.set()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogateescape")).hexdigest()
