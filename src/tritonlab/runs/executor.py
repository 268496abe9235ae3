"""Where learner runs happen: the executor seam between the service and the machines.

- `local` (the default): this machine's warm zygote (`sandbox.Zygote`), exactly as before. The service
  keeps that path itself; nothing here is involved.
- `ray`: a pool of worker actors in a Ray cluster (`ray_executor/`), one per GPU or per
  `tritonlab_interpreter` resource unit, each holding a warm local zygote on its own node and applying the
  same sandbox there. Chosen with `--executor ray` or `TRITONLAB_EXECUTOR=ray`; `ray` is imported only then
  (the CLI's start-up never imports it).

A remote executor hands the service an object that looks like a Zygote to the code above it:
`start(run_dir, limits)` returns a handle with `wait(on_output) -> RunResult`, `stop()` and `node`; the
grader writes the job into a local run directory and reads the results from there, so a remote run is judged
by the very code, and validated by the very checks (`rundir.sanitize`), that judge a local one.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

EXECUTORS = ("local", "ray")
TRUTHY = ("1", "true", "yes", "on")


class ExecutorError(RuntimeError):
    """The executor cannot run anything (no cluster, no usable worker); the message says what to do."""


class GpuBusy(ExecutorError):
    """A run that times the GPU only when it is idle (capacity.IDLE_ONLY_MODES: the speed line, never graded)
    found no idle moment in time, on a cluster worker (ray_executor/driver.py); nothing ran."""


class WorkerLost(ExecutorError):
    """What runs a check went away mid-run, and so did the one retry: nothing was graded. A remote worker
    (ray_executor/remote.py), or this machine's harness: its zygote, or a replay or compile child killed from
    outside (grading/retry.py)."""

    def __init__(self, message: str, nodes: list[str] | None = None) -> None:
        super().__init__(message)
        self.nodes = nodes or []


def choose(requested: str | None = None) -> str:
    """`--executor`, else TRITONLAB_EXECUTOR, else `local`."""
    wanted = (requested or os.environ.get("TRITONLAB_EXECUTOR") or "local").strip().lower()
    if wanted not in EXECUTORS:
        raise ExecutorError(f"unknown executor {wanted!r}: use one of {', '.join(EXECUTORS)}")
    return wanted


def this_node() -> str:
    """The name a local run reports as its node."""
    return socket.gethostname()


@dataclass(frozen=True)
class RemoteOptions:
    address: str | None = None  # RAY_ADDRESS: HOST:PORT of the head's GCS, `auto`, or ray://HOST:PORT
    allow_unhardened: bool = False  # use workers whose self-check found no hardened sandbox (trusted only)
    workers: int | None = None  # at most this many worker actors (None: one per resource unit)

    @classmethod
    def from_env(cls, allow_unhardened: bool | None = None, workers: int | None = None) -> RemoteOptions:
        allow = allow_unhardened
        if allow is None:
            allow = os.environ.get("TRITONLAB_RAY_ALLOW_UNHARDENED", "").strip().lower() in TRUTHY
        count = workers
        if count is None and os.environ.get("TRITONLAB_RAY_WORKERS", "").strip().isdigit():
            count = int(os.environ["TRITONLAB_RAY_WORKERS"]) or None
        return cls(os.environ.get("RAY_ADDRESS") or None, allow, count)
