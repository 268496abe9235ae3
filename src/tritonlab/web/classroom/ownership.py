"""Who started which run and quiz attempt in a classroom: `OwnedJobs` and `OwnedAttempts` remember the
user (set by the guard in `current_user`) and answer 404 to anyone else. At most one run per learner at a
time (FIFO across learners through the service's gate) and RUNS_PER_MINUTE starts a minute, both answered
429 with a sentence and `Retry-After`.
"""

from __future__ import annotations

import collections
import threading
import time
from contextvars import ContextVar

from fastapi import HTTPException

from tritonlab.classroom.room import User
from tritonlab.i18n import t
from tritonlab.web.jobs import Job, Jobs
from tritonlab.web.quiz_api import MAX_ATTEMPTS_ALL, Attempt, Attempts

RUNS_PER_MINUTE = 20
ATTEMPTS_PER_LEARNER = 64  # quiz attempts kept per learner: a lesson page view makes one

# The user of the request being served, and the language of its messages: set by the guard
# (web/classroom/guard.py) around every request.
current_user: ContextVar[User | None] = ContextVar("tritonlab_user", default=None)
current_lang: ContextVar[str] = ContextVar("tritonlab_lang", default="en")


class OwnedJobs(Jobs):
    def __init__(self, per_minute: int = RUNS_PER_MINUTE) -> None:
        super().__init__()
        self.max_active = 512
        self.per_minute = per_minute
        self._owners: dict[str, int] = {}
        self._starts: dict[int, collections.deque[float]] = collections.defaultdict(collections.deque)
        self._admit = threading.Lock()

    def start(self, kind, label, work, owner=None):  # type: ignore[no-untyped-def]
        user = current_user.get()
        if user is None:
            return super().start(kind, label, work)
        with self._admit:
            with self._lock:
                mine = [j for k, j in self._jobs.items() if not j.done and self._owners.get(k) == user.id]
            if mine:
                raise HTTPException(
                    429,
                    t("classroom_ui.errors.run_in_flight", current_lang.get()),
                    headers={"Retry-After": "2"},
                )
            now = time.monotonic()
            recent = self._starts[user.id]
            while recent and now - recent[0] > 60:
                recent.popleft()
            if len(recent) >= self.per_minute:
                wait = int(60 - (now - recent[0])) + 1
                message = t(
                    "classroom_ui.errors.too_many_runs", current_lang.get(), count=self.per_minute, wait=wait
                )
                raise HTTPException(429, message, headers={"Retry-After": str(wait)})
            recent.append(now)
            job = super().start(kind, label, work, owner=user.id)
            with self._lock:
                self._owners[job.id] = user.id
        return job

    def get(self, job_id: str) -> Job | None:
        job = super().get(job_id)
        user = current_user.get()
        if job is None or user is None:
            return job
        with self._lock:
            return job if self._owners.get(job_id) == user.id else None


class OwnedAttempts(Attempts):
    """Quiz attempts in one pool per learner (quiz_api.Attempts): a learner's page views drop only their own
    oldest attempts; an attempt answers only its owner (404 to anyone else)."""

    def __init__(self, per_learner: int = ATTEMPTS_PER_LEARNER, total: int = MAX_ATTEMPTS_ALL) -> None:
        super().__init__(per_owner=per_learner, total=total)

    def owner(self) -> object:
        user = current_user.get()
        return user.id if user else None

    def get(self, attempt_id: str) -> Attempt | None:
        attempt = super().get(attempt_id)
        if attempt is None or self.owned_by(attempt_id) != self.owner():
            return None
        return attempt
