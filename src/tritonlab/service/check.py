"""The service's check: the check pipeline (grading/check/pipeline.py) with the service's steps filled in.

While waiting for its place in the backend's fair gate, a check at the head of the queue has its cases made
(so the worker that frees up never waits for the parent's NumPy); it holds the place while it is graded
(steps 1-6) and gives it back before it is saved (7, record.py), shown (8, the interface's `on_verdict`) and
timed (9, speed.py: more runs, each queued on its own). Steps 1-6 go through `grading/retry.py`: when
tritonlab's own harness died under them (the worker, a replay or trusted-compile child killed from outside),
they are graded again, once, on a live worker (`service.zygote()` starts a new one when the last died), with
the same seed and text. A check whose harness or remote worker was lost under the retry too is not graded,
and neither saved, shown nor timed: its verdict says so (`worker-lost`). With a cluster (`executor="ray"`),
steps 1-6 run on a worker, from the seed (remote_check.py: the same pipeline there, its verdict data back).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tritonlab.grading import case_cache, retry
from tritonlab.grading.check.pipeline import CheckRun
from tritonlab.models import Exercise, Verdict
from tritonlab.runs import executor as executors
from tritonlab.runs import sandbox
from tritonlab.runs.collect import Run
from tritonlab.service import record, remote_check


class ServiceCheckRun(CheckRun):
    """One `Service.check`. `service` is the Service (or a classroom's LearnerService) it runs for; `target` the
    learner's file as named, `source` its text as read before queueing (a later save never changes what is
    graded); `began` when the check was asked for (the verdict's `total_s`)."""

    def __init__(
        self,
        service: object,
        exercise: Exercise,
        target: Path,
        source: str | None,
        zygote: sandbox.Zygote,
        seed: int | None,
        *,
        began: float,
        record: bool,
        speed: bool,
        timeout: float,
        huge: bool,
        on_output: Callable[[str], None] | None,
        on_start: Callable[[Run], None] | None,
        on_wait: Callable[[int], None] | None,
        on_verdict: Callable[[Verdict], None] | None,
        cache: str | None = None,
    ) -> None:
        super().__init__(
            exercise,
            target.resolve(),
            service.backend,
            zygote,
            seed=seed,
            timeout=timeout,
            on_output=on_output,
            on_start=self._started,
            source=source,
            huge_cases=huge,
            cache=cache or service.cache_name,
        )
        self.service, self.target, self.began = service, target, began
        self.wants_record, self.wants_speed = record, speed
        self.user_on_start, self.on_wait, self.on_verdict = on_start, on_wait, on_verdict
        self.handles: list[Run] = []  # the check child's run: where it ran (a cluster node)
        self.ahead: list = []  # the thread that made this check's cases while it waited, if one did
        self.queue_wait = 0.0
        self.attempt: int | None = None  # the saved attempt, which the speed is added to

    def _started(self, run: Run) -> None:
        self.handles.append(run)
        if self.user_on_start:
            self.user_on_start(run)

    def _waiting(self, position: int) -> None:
        # Next in line: make this check's cases now (case_cache, one maker per seed), so the worker that frees
        # up never waits for the parent's NumPy. Only the head of the queue: memory stays bounded.
        # With a cluster the worker makes them from the seed: nothing to make here.
        local = self.service.executor == "local"
        if position == 1 and local and not self.ahead and case_cache.CASES.budget > 0:
            self.ahead.append(self.service._make_cases_soon(self.exercise, self.seed))
        if self.on_wait:
            self.on_wait(position)

    @contextlib.contextmanager
    def queued(self) -> Iterator[None]:
        gate = self.service.gate()
        expect = getattr(self.zygote, "expect", None)  # the local zygote: a child warms up for this learner
        if expect is not None and self.service.executor == "local":  # while the check waits for its slot
            expect(self.cache)
        asked = time.monotonic()
        ticket = gate.acquire(self._waiting, owner=self.service.run_owner)
        self.queue_wait = time.monotonic() - asked
        try:
            yield
        finally:
            gate.release(ticket)

    def grade(self) -> Verdict:
        def once(worker: object) -> Verdict:
            self.handles.clear()  # on a retry, its run (not the first attempt's) says where the check ran
            self.zygote, self.graded = worker, False  # the seed and the text stay those of the first attempt
            return super(ServiceCheckRun, self).grade()

        try:
            if self.service.executor != "local":  # steps 1-6 on a cluster worker, from the seed
                return remote_check.grade_remote(self, self.zygote, self._started)
            return retry.check_retrying(once, self.service.zygote, first=self.zygote)
        except executors.WorkerLost as lost:  # nothing was graded: `graded` stays False
            self.graded = False
            self.verdict = self.service._lost_verdict(self.exercise, self.target, self.seed, lost)
            return self.verdict

    def record(self, verdict: Verdict) -> None:
        """7. Where the check ran, how long it queued and why it is not timed go on the verdict; with `record`,
        the attempt is saved (record.py) before anything shows it."""
        verdict.executor = self.service.executor
        verdict.node = getattr(self.handles[0], "node", "") if self.handles else ""
        verdict.node = verdict.node or executors.this_node()
        verdict.timings = {"queue_wait_s": self.queue_wait, "cases_ahead": bool(self.ahead)} | verdict.timings
        verdict.speed_reason = self.service._no_speed(verdict, self.wants_speed)
        verdict.timings["total_s"] = time.monotonic() - self.began
        if self.wants_record:
            self.attempt = record.save(self.service.store, verdict)

    def show(self, verdict: Verdict) -> None:
        """8. The interface shows the saved verdict (the CLI prints it, the web page gets its SSE event)."""
        if self.on_verdict:
            self.on_verdict(verdict)

    def speed(self, verdict: Verdict) -> None:
        """9. The next seed's cases are made while this one is timed; a passing GPU check that asked for it is
        timed (speed.py) and the speed added to the saved attempt."""
        self.service.prepare_cases(self.exercise)
        if verdict.speed_reason:
            return
        mark = time.monotonic()
        self.service._add_speed(verdict, self.exercise, self.target, self.source, self.on_wait)
        verdict.timings["speed_s"] = time.monotonic() - mark
        verdict.timings["total_s"] = time.monotonic() - self.began
        if self.attempt is not None:
            record.add_speed(self.service.store, self.attempt, verdict)
