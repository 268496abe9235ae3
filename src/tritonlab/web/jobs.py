"""Runs and checks in flight: each is a Job on its own thread, whose events the browser reads over SSE.

A job's events are kept in order (so a reconnecting EventSource resumes with Last-Event-ID), and its
sandbox run can be stopped at any time: while it runs (the whole process tree is killed), or before it starts,
while it waits for a free worker: then it leaves the queue at once and its stream ends with a `cancelled`
event (a run that gets its worker in that same instant is killed the moment it starts). Finished jobs are
forgotten after a while. Output past the first RAM_PER_JOB bytes of a job lies on disk, bounded per learner and
for the server (web/output_spill.py).
"""

from __future__ import annotations

import errno
import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tritonlab.web.output_spill import DROPPED_NOTE, RAM_PER_JOB, Spill, Spilled

if TYPE_CHECKING:
    from tritonlab.service import Run

KEEP_FINISHED_S = 600.0
KEEP_FINISHED = 2048  # finished jobs kept at most (the oldest are forgotten first)
MAX_ACTIVE = 16


class Busy(Exception):
    """Too many runs are already waiting."""


class Cancelled(Exception):
    """Raised from the queue's wait callback: the job was stopped before it started."""


class Job:
    def __init__(self, kind: str, label: str, owner: object = None, spill: Spill | None = None) -> None:
        self.id = uuid.uuid4().hex
        self.kind = kind
        self.label = label
        self.owner = owner  # the learner who started it (a classroom), else None
        # (event name, JSON data); output past RAM_PER_JOB lies in the spill file (web/output_spill.py)
        self.events: list[tuple[str, str | Spilled]] = []
        self.spill = spill
        self.ram_output = 0  # bytes of output events held in RAM
        self.spilled_bytes = 0  # bytes of this job's output on disk
        self.spill_dropped = False  # its spilled output was dropped to make room
        self.dropping = False  # new output no longer fits anywhere: it is dropped (with one note)
        self.done = False
        self.finished_at = 0.0
        self.run: Run | None = None
        self.stop_requested = False
        self.cancelled = False  # stopped while still waiting for a worker
        self._position = -1
        self._lock = threading.Lock()
        self._wakers: set[tuple[Any, Any]] = set()  # (event loop, asyncio.Event) of streams waiting for news

    def emit(self, event: str, data: dict[str, Any]) -> None:
        with self._lock:
            if not self.done:  # a job cancelled in the queue has ended; its thread may still say things
                self.events.append((event, json.dumps(data)))
        self._wake()

    def add_waker(self, loop: Any, event: Any) -> None:
        """An SSE stream sleeps on `event` (an asyncio.Event of `loop`) until this job has news: no polling,
        so a class's hundreds of queued checks cost the server nothing while they wait."""
        with self._lock:
            self._wakers.add((loop, event))

    def remove_waker(self, loop: Any, event: Any) -> None:
        with self._lock:
            self._wakers.discard((loop, event))

    def _wake(self) -> None:
        with self._lock:
            wakers = list(self._wakers)
        for loop, event in wakers:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that stream's loop has closed
                pass

    def since(self, index: int) -> tuple[list[tuple[str, str]], bool]:
        with self._lock:
            batch, done = self.events[index:], self.done
        if self.spill is None:
            return batch, done  # type: ignore[return-value]
        return [(n, self.spill.read(self, d) if isinstance(d, Spilled) else d) for n, d in batch], done

    def finish(self) -> None:
        with self._lock:
            if self.done:
                return
            self.events.append(("end", "{}"))
            self.done = True
            self.finished_at = time.monotonic()
        self._wake()

    # ---- callbacks handed to the service -----------------------------------------------------------------

    def on_output(self, text: str) -> None:
        """Output as the run prints it: the first RAM_PER_JOB bytes in RAM, the rest on disk (bounded: past the
        budgets it is dropped, with one note in the stream)."""
        data = json.dumps({"text": text})
        with self._lock:
            if self.done or self.dropping:
                return
            if self.spill is None or (
                self.ram_output + len(data) <= RAM_PER_JOB and self.spill.take_ram(len(data))
            ):
                self.ram_output += len(data)
                self.events.append(("output", data))
            else:
                ref = self.spill.write(self, data.encode())
                if ref is not None:
                    self.events.append(("output", ref))
                else:
                    self.dropping = True
                    note = DROPPED_NOTE.format(what=self.spill.limits())
                    self.events.append(("output", json.dumps({"text": note})))
        self._wake()

    def on_wait(self, position: int) -> None:
        if self.cancelled:  # leave the service's queue now (FairGate.acquire drops the ticket)
            raise Cancelled()
        if position != self._position:  # the gate calls back twice a second; report changes only
            self._position = position
            self.emit("queue", {"position": position})

    def on_start(self, run: Run) -> None:
        with self._lock:
            self.run = run
            stop = self.stop_requested
        self.emit("start", {"at": time.time()})
        if stop:
            run.stop()

    def stop(self) -> bool:
        """Stop the run: kill it if it started; if it is still waiting, end the job now."""
        with self._lock:
            if self.done:
                return False
            self.stop_requested = True
            run = self.run
        self.emit("stopping", {})
        if run is not None:
            run.stop()
            return True
        self.cancelled = True
        if self.kind == "run":  # a run's stream always has its exit (here: stopped, never started)
            self.emit(
                "exit",
                {
                    "exit_code": None,
                    "signal": None,
                    "timed_out": False,
                    "stopped": True,
                    "started": False,
                    "seconds": 0.0,
                    "truncated": False,
                    "error": None,
                },
            )
        self.emit("cancelled", {"kind": self.kind, "reason": "stopped before it started"})
        self.finish()
        return True


class Jobs:
    def __init__(self, spill: Spill | None = None) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self.max_active = MAX_ACTIVE  # a classroom raises it (web/classroom/ownership.py: per learner)
        self.spill = spill or Spill()
        self.spill.finished_jobs = self._finished_with_output

    def _finished_with_output(self) -> list[Job]:
        """Finished jobs holding spilled output, oldest first (what the spill drops first)."""
        with self._lock:
            done = [j for j in self._jobs.values() if j.done and j.spilled_bytes]
        return sorted(done, key=lambda j: j.finished_at)

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    @property
    def active(self) -> int:
        with self._lock:
            return sum(1 for j in self._jobs.values() if not j.done)

    def start(self, kind: str, label: str, work: Callable[[Job], None], owner: object = None) -> Job:
        """Start `work(job)` on a thread; any exception becomes an `error` event. Then `end`."""
        self._prune()
        if self.active >= self.max_active:
            raise Busy(f"{self.max_active} runs are already in flight or waiting; wait for one to finish")
        job = Job(kind, label, owner, self.spill)
        with self._lock:
            self._jobs[job.id] = job

        def main() -> None:
            try:
                work(job)
            except Cancelled:  # stopped while queued: stop() already ended the job
                pass
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

    def close(self) -> None:
        """The server stops: its spilled output goes."""
        self.spill.close()

    def _prune(self) -> None:
        now = time.monotonic()
        with self._lock:
            finished = sorted((j for j in self._jobs.values() if j.done), key=lambda j: j.finished_at)
            extra = max(0, len(finished) - KEEP_FINISHED)
            gone = [j for i, j in enumerate(finished) if i < extra or now - j.finished_at > KEEP_FINISHED_S]
            for job in gone:
                del self._jobs[job.id]
        for job in gone:
            self.spill.forget(job)
