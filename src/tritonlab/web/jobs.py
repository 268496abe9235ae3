"""Runs and checks in flight: each is a Job on its own thread, whose events the browser reads over SSE.

A job's events are kept in order (so a reconnecting EventSource resumes with Last-Event-ID), and its
sandbox run can be stopped at any time: before it starts (it is stopped the moment it does) or while it runs
(the whole process tree is killed). Finished jobs are forgotten after a while.
"""

from __future__ import annotations

import errno
import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tritonlab.service import Run

KEEP_FINISHED_S = 600.0
MAX_ACTIVE = 16


class Busy(Exception):
    """Too many runs are already waiting."""


class Job:
    def __init__(self, kind: str, label: str) -> None:
        self.id = uuid.uuid4().hex
        self.kind = kind
        self.label = label
        self.events: list[tuple[str, str]] = []  # (event name, JSON data)
        self.done = False
        self.finished_at = 0.0
        self.run: Run | None = None
        self.stop_requested = False
        self._position = -1
        self._lock = threading.Lock()

    def emit(self, event: str, data: dict[str, Any]) -> None:
        with self._lock:
            self.events.append((event, json.dumps(data)))

    def since(self, index: int) -> tuple[list[tuple[str, str]], bool]:
        with self._lock:
            return self.events[index:], self.done

    def finish(self) -> None:
        with self._lock:
            self.events.append(("end", "{}"))
            self.done = True
            self.finished_at = time.monotonic()

    # ---- callbacks handed to the service -----------------------------------------------------------------

    def on_output(self, text: str) -> None:
        self.emit("output", {"text": text})

    def on_wait(self, position: int) -> None:
        if position != self._position:  # the gate calls back twice a second; report changes only
            self._position = position
            self.emit("queue", {"position": position})

    def on_start(self, run: Run) -> None:
        self.run = run
        self.emit("start", {"at": time.time()})
        if self.stop_requested:
            run.stop()

    def stop(self) -> bool:
        if self.done:
            return False
        self.stop_requested = True
        self.emit("stopping", {})
        if self.run is not None:
            self.run.stop()
        return True


class Jobs:
    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    @property
    def active(self) -> int:
        with self._lock:
            return sum(1 for j in self._jobs.values() if not j.done)

    def start(self, kind: str, label: str, work: Callable[[Job], None]) -> Job:
        """Start `work(job)` on a thread; any exception becomes an `error` event. Then `end`."""
        self._prune()
        if self.active >= MAX_ACTIVE:
            raise Busy(f"{MAX_ACTIVE} runs are already in flight or waiting; wait for one to finish")
        job = Job(kind, label)
        with self._lock:
            self._jobs[job.id] = job

        def main() -> None:
            try:
                work(job)
            except Exception as exc:  # shown to the learner in the terminal, never swallowed
                message = f"{type(exc).__name__}: {exc}"
                if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    message = (
                        f"the server's disk is full ({exc.strerror}): the {kind} did not finish and nothing "
                        "was recorded; ask the server's operator to free space"
                    )
                job.emit("error", {"message": message, "disk_full": "disk is full" in message})
            finally:
                job.finish()

        threading.Thread(target=main, name=f"tritonlab-{kind}-{job.id[:6]}", daemon=True).start()
        return job

    def stop_all(self) -> None:
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            job.stop()

    def _prune(self) -> None:
        now = time.monotonic()
        with self._lock:
            for job_id in [
                k for k, j in self._jobs.items() if j.done and now - j.finished_at > KEEP_FINISHED_S
            ]:
                del self._jobs[job_id]
