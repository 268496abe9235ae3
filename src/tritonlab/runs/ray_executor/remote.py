"""One job on a cluster worker, driven from the server or the CLI: `RemoteRun`, with the face of collect.Run.

`RemoteRun.wait` ships the run directory's job, inputs and the learner's file text (transfer.payload) to a free
worker, streams the run's output while polling, and writes the returned files into the local run directory,
validated like a local run's (transfer.land). A worker lost mid-run (its node died) is forgotten and the run
is tried once more on another worker; when that fails too, WorkerLost says that nothing was graded.

`RemoteCheck` is a whole check the same way: its spec out (no case data: the worker makes the cases from the
seed), its verdict data back (service/remote_check.py), with the same streaming, Stop and retry.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import ray
from ray import exceptions as ray_errors

from tritonlab.runs.capacity import IDLE_WAIT_S, MAX_SLOTS, idle_only, times_gpu
from tritonlab.runs.collect import RunResult
from tritonlab.runs.executor import WorkerLost
from tritonlab.runs.limits import Limits
from tritonlab.runs.ray_executor import transfer
from tritonlab.runs.sandbox import SandboxError

POLL_S = 0.1  # how often the driver asks for new output
GRACE_S = 30.0  # after the run's own wall-clock limit, how long the driver waits before calling it lost
RETRY_WAIT_S = 60.0  # how long a retry waits for another free worker
# What a lost worker looks like to the driver: its process or node died, or it cannot be reached.
LOST = (
    ray_errors.RayActorError,
    ray_errors.WorkerCrashedError,
    ray_errors.NodeDiedError,
    ray_errors.ObjectLostError,
)


def label(report: dict) -> str:
    """How messages name a worker: its host, address and Ray node, from its self-check."""
    return f"{report.get('hostname', '?')} ({report.get('ip', '?')}, ray node {str(report.get('node_id', ''))[:8]})"


class WorkerRef:
    """A worker actor as the driver knows it: its handle, its self-check, its slots (runs at once, from its
    self-check) and how they are used now (driver.RayPool, slots.grant), the runs it was given."""

    def __init__(self, handle: object, report: dict) -> None:
        self.handle = handle
        self.report = report
        self.key = report["actor"]
        self.node = label(report)
        self.slots = slot_count(report.get("slots"))
        self.busy = 0  # runs in flight on it (all its slots while held alone)
        self.alone = False  # held by a run that times the GPU
        self.claimed_by: object = None  # the exclusive run waiting for it to empty
        self.runs = 0


def slot_count(value: object) -> int:
    """A worker's runs at once as its self-check reported them: a whole number from 1 to MAX_SLOTS, else 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        return 1
    return max(1, min(value, MAX_SLOTS))


class Workers(Protocol):
    """What a remote run needs of the cluster's workers (driver.RayPool): a free one, given back or forgotten,
    and the compile cache named for a run directory."""

    def acquire(
        self,
        exclude: set[str],
        timeout: float | None = None,
        exclusive: bool = False,
        idle_wait: float | None = None,
    ) -> WorkerRef: ...

    def release(self, worker: WorkerRef) -> None: ...

    def forget(self, worker: WorkerRef) -> None: ...

    def cache_for(self, run_dir: Path) -> str | None: ...


class _Lost(Exception):
    pass


class RemoteRun:
    """One job on a cluster worker, with the face of collect.Run: `wait(on_output)`, `stop()`."""

    def __init__(self, pool: Workers, run_dir: Path, limits: Limits) -> None:
        self.pool, self.run_dir, self.limits = pool, run_dir, limits
        self.id = uuid.uuid4().hex
        self.node = ""
        self.attempts: list[str] = []  # the nodes tried, in order
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._worker: WorkerRef | None = None
        self._shown: list[str] = []  # what this attempt streamed so far
        self._before = ""  # what earlier, lost attempts showed, and the note that they were lost
        self.timings: dict = {}  # driver side, seconds; the worker's own come back in its reply
        self.exclusive = False  # it times the GPU: its worker alone (set from its job's mode by _payload)
        self.idle_wait: float | None = None  # and only an idle one, for at most this long (the speed line)

    def stop(self) -> None:
        self._stop.set()
        worker = self._worker
        if worker is not None:
            worker.handle.stop.remote(self.id)

    def wait(self, on_output: Callable[[str], None] | None = None) -> RunResult:
        emit = on_output or (lambda _text: None)
        began = time.monotonic()
        args = self._payload()
        self.timings["payload_s"] = time.monotonic() - began
        tried: set[str] = set()
        while True:
            asked = time.monotonic()
            worker = self.pool.acquire(
                tried, None if not tried else RETRY_WAIT_S, exclusive=self.exclusive, idle_wait=self.idle_wait
            )
            self.timings["worker_wait_s"] = self.timings.get("worker_wait_s", 0.0) + time.monotonic() - asked
            self._worker, self.node = worker, worker.node
            self.attempts.append(worker.node)
            try:
                sent = time.monotonic()
                reply = self._attempt(worker, args, emit)
                self.timings["remote_s"] = time.monotonic() - sent
            except _Lost as exc:
                self._worker = None
                self.pool.forget(worker)
                tried.add(worker.key)
                if len(tried) >= 2 or self._stop.is_set():
                    raise WorkerLost(
                        f"the worker running this was lost ({'; '.join(self.attempts)}: {exc})"
                        + (" and so was the retry" if len(tried) >= 2 else "")
                        + "; nothing was graded",
                        list(self.attempts),
                    ) from None
                note = (
                    f"\n[tritonlab] the worker on {worker.node} was lost ({exc}); running again elsewhere\n"
                )
                self._before += "".join(self._shown) + note
                emit(note)
                continue
            except BaseException:
                self._worker = None
                self.pool.release(worker)
                raise
            self._worker = None
            self.pool.release(worker)
            return self._land(reply)

    def _payload(self) -> tuple:
        """What this run ships (the arguments of the actor's method after the job's id)."""
        cache = self.pool.cache_for(self.run_dir)  # None: a run directory from elsewhere, no shared cache
        job, inputs, learner = transfer.payload(self.run_dir, cache)
        self.exclusive = times_gpu(job)
        self.idle_wait = IDLE_WAIT_S if idle_only(job) else None
        self.timings["payload_mb"] = sum(len(v) for v in inputs.values()) / 1e6
        return job, inputs, learner, dataclasses.asdict(self.limits)

    def _call(self, worker: WorkerRef, args: tuple) -> object:
        return worker.handle.run.remote(self.id, *args)

    def _attempt(self, worker: WorkerRef, args: tuple, emit: Callable[[str], None]) -> dict:
        self._shown = []
        ref = self._call(worker, args)
        if self._stop.is_set():
            worker.handle.stop.remote(self.id)
        shown = 0
        deadline = time.monotonic() + self.limits.wall_seconds + GRACE_S
        while True:
            ready, _ = ray.wait([ref], timeout=POLL_S)
            if ready:
                break
            if time.monotonic() > deadline:
                worker.handle.stop.remote(self.id)
                raise _Lost(f"no answer {self.limits.wall_seconds + GRACE_S:.0f} s after the run began")
            try:
                text = ray.get(worker.handle.read_output.remote(self.id, shown), timeout=5)
            except (ray_errors.GetTimeoutError, *LOST):
                continue  # the run's own reference says what happened
            if text:
                shown += len(text)
                self._shown.append(text)
                emit(text)
        try:
            reply = ray.get(ref)
        except LOST as exc:
            raise _Lost(type(exc).__name__) from None
        except ray_errors.RayTaskError as exc:
            raise SandboxError(f"the worker on {worker.node} failed: {exc}") from None
        output = reply.get("output", "")
        if len(output) > shown:
            emit(output[shown:])
        return reply

    def _land(self, reply: dict) -> RunResult:
        """Write what came back into the local run directory, then validate it exactly like a local run."""
        landed = time.monotonic()
        transfer.land(self.run_dir, reply)
        self.timings["land_s"] = time.monotonic() - landed
        self.timings |= transfer.worker_timings(reply)
        self.timings["attempts"] = len(self.attempts)
        return transfer.run_result(self.run_dir, reply, self._before, self.started, self.timings)


class RemoteCheck(RemoteRun):
    """A whole check on a worker (service/remote_check.py): its spec out (exercise, seed, text, versions; no
    case data), its verdict data back, streamed, Stop and the retry on a lost worker as for a run. `wait`
    returns the reply as transfer.check_reply took it; `timings` has `payload_mb` (out) and `reply_mb`
    (back). `limits.wall_seconds` bounds the whole check (its run and its replay) before the worker is lost."""

    def __init__(self, pool: Workers, spec: dict, limits: Limits) -> None:
        super().__init__(pool, Path(), limits)
        self.spec = spec

    def _payload(self) -> tuple:
        self.timings["payload_mb"] = transfer.size(self.spec) / 1e6
        return (self.spec,)

    def _call(self, worker: WorkerRef, args: tuple) -> object:
        return worker.handle.check.remote(self.id, *args)

    def _land(self, reply: dict) -> dict:  # type: ignore[override] - a check's answer, not a RunResult
        landed = time.monotonic()
        self.timings["reply_mb"] = transfer.size(reply) / 1e6
        taken = transfer.check_reply(reply)
        self.timings["land_s"] = time.monotonic() - landed
        self.timings |= transfer.worker_timings(reply)
        self.timings["attempts"] = len(self.attempts)
        if "output" in taken:
            taken["output"] = self._before + taken["output"]
        return taken
