"""The driver's side of the cluster, in the server or the CLI: it joins the Ray cluster (`connect`) and keeps its
tritonlab workers (`RayPool`).

RayPool creates the worker actors (actor.Worker), reads their self-checks and keeps only the usable ones: a
worker whose sandbox is not hardened is refused unless the operator allowed it
(TRITONLAB_RAY_ALLOW_UNHARDENED=1), and so is one whose course or tritonlab code differs from this process's
(versions.py): it grades a check from its seed, so it must make and judge the same cases. To the grader it looks
like a Zygote: `new_run_dir` gives a local run directory, `start(run_dir, limits)` returns a remote.RemoteRun.

Each worker takes several runs at once: the `slots` its self-check reports (runs/capacity.py, computed on its own
node; TRITONLAB_SLOTS is passed to it from this process's environment). `acquire` hands a run a worker with a
free slot, the least loaded first (`prefer`), in arrival order (slots.grant); `release` gives the slot back; a
lost worker is `forget`-ten with all its slots. `capacity` is the sum of the usable workers' slots (the service's
queue follows it through `on_capacity`). A run whose job times the GPU (capacity.times_gpu: speed, bench,
profile) takes a worker alone: it waits for one with no run in flight and holds all its slots until it ends;
while it waits it claims the least loaded worker, which takes no new shared run meanwhile (it cannot starve).
The speed line's timing run (capacity.idle_only) takes only an idle worker, claims none, and gives up
(GpuBusy) after capacity.IDLE_WAIT_S: graded checks go first.
The server is a long-running Ray driver that joins the cluster through the head's GCS (RAY_ADDRESS=HOST:PORT or
`auto`); a one-off `check` from a laptop may use Ray Client (ray://HOST:10001) instead. See docs/scale.md.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import ray
from ray import exceptions as ray_errors

from tritonlab import config
from tritonlab.runs import backend as backends
from tritonlab.runs import caches, capacity, runfolder
from tritonlab.runs.executor import ExecutorError, GpuBusy, RemoteOptions, WorkerLost
from tritonlab.runs.limits import Limits
from tritonlab.runs.ray_executor import versions
from tritonlab.runs.ray_executor.actor import START_TIMEOUT_S, Worker
from tritonlab.runs.ray_executor.remote import RemoteCheck, RemoteRun, WorkerRef, label
from tritonlab.runs.ray_executor.slots import Want, grant

NAMESPACE = "tritonlab"
RESOURCES = {"interpreter": "tritonlab_interpreter", "gpu": "GPU"}
# An actor's threads: one per run in flight (up to capacity.MAX_SLOTS), one per run's output poll beside it,
# and a few for Stop and the self-check.
ACTOR_CONCURRENCY = 2 * capacity.MAX_SLOTS + 8


def connect(address: str | None) -> None:
    """Join the cluster as a driver (once per process)."""
    if ray.is_initialized():
        return
    try:
        ray.init(
            address=address or "auto",
            namespace=NAMESPACE,
            log_to_driver=False,  # worker logs stay on their nodes: `check --json` prints one JSON object
            logging_level=logging.WARNING,
            configure_logging=True,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ExecutorError(
            f"could not join the Ray cluster at {address or 'auto'}: {exc}. Start one (docs/scale.md) and "
            "set RAY_ADDRESS=HOST:PORT of its head"
        ) from None


class RayPool:
    """The cluster's tritonlab workers, as the service sees them: a Zygote-like `start`, a capacity."""

    name = "ray"

    def __init__(self, backend: str | None, options: RemoteOptions) -> None:
        self.options = options
        connect(options.address)
        self.choice = self._choose_backend(backend)
        self.backend = self.choice.backend
        self.resource = RESOURCES[self.backend]
        self.workers: dict[str, WorkerRef] = {}
        self.refused: list[dict] = []
        self.reports: list[dict] = []
        self.hardened: bool | None = None
        self.hardened_reason = ""
        self.info: dict = {}
        self.versions = versions.local()  # a worker must report the same course and code (versions.py)
        self.dead = False
        self.on_capacity: Callable[[int], None] | None = None
        self._waiting: list[Want] = []  # runs waiting for a worker, in arrival order (slots.grant)
        self._cond = threading.Condition()
        self._cache_of: dict[Path, str] = {}  # run directory -> the compile cache named for it (new_run_dir)
        self._started = False
        self._start_lock = threading.Lock()

    def _choose_backend(self, requested: str | None) -> backends.Choice:
        wanted = (requested or config.default_backend()).lower()
        if wanted not in config.BACKENDS:
            raise ExecutorError(f"unknown backend {wanted!r}: use one of {', '.join(config.BACKENDS)}")
        resources = ray.cluster_resources()
        if wanted == "auto":
            wanted = "gpu" if resources.get("GPU", 0) >= 1 else "interpreter"
        return backends.Choice(wanted, f"ray: {int(resources.get(RESOURCES[wanted], 0))} {RESOURCES[wanted]}")

    # ---- workers ----------------------------------------------------------------------------------------

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> dict:
        """Create the workers (once), read their self-checks, keep the usable ones."""
        with self._start_lock:
            if not self._started:
                self._start(timeout)
                self._started = True
        if not self.workers:
            raise ExecutorError(self._why_none())
        return self.info

    def _start(self, timeout: float) -> None:
        units = int(ray.cluster_resources().get(self.resource, 0))
        count = min(units, self.options.workers) if self.options.workers else units
        if count < 1:
            raise ExecutorError(
                f"the Ray cluster offers no {self.resource!r} resource: start its nodes with "
                + ("GPUs" if self.backend == "gpu" else f"--resources '{{\"{self.resource}\": 1}}'")
                + " (docs/scale.md)"
            )
        capacity.forced()  # a bad TRITONLAB_SLOTS is said here, once, not by every worker
        placement = {"num_gpus": 1} if self.backend == "gpu" else {"resources": {self.resource: 1}}
        actor_class = ray.remote(Worker)
        handles = [
            actor_class.options(
                num_cpus=0,
                max_concurrency=ACTOR_CONCURRENCY,
                max_restarts=0,
                scheduling_strategy="SPREAD",
                **placement,
            ).remote(
                self.backend,
                os.environ.get("TRITONLAB_SANDBOX"),
                os.environ.get("TRITONLAB_POOL"),
                os.environ.get(capacity.ENV),
            )
            for _ in range(count)
        ]
        pending = {h.hello.remote(): h for h in handles}
        ready, late = ray.wait(list(pending), num_returns=len(pending), timeout=timeout)
        addresses = {n["NodeID"]: n.get("NodeManagerAddress") for n in ray.nodes()}
        for ref in late:
            self.refused.append({"reason": f"did not finish its self-check within {timeout:.0f} s"})
            ray.kill(pending[ref])
        for ref in ready:
            handle = pending[ref]
            try:
                report = dict(ray.get(ref))
            except ray_errors.RayError as exc:
                self.refused.append({"reason": f"failed to start: {str(exc).splitlines()[0]}"})
                continue
            report["ip"] = addresses.get(report.get("node_id")) or report.get("ip")
            self.reports.append(report)
            problem = self._problem(report)
            if problem:
                self.refused.append({"node": label(report), "reason": problem})
                ray.kill(handle)
                continue
            worker = WorkerRef(handle, report)
            self.workers[worker.key] = worker
        used = list(self.workers.values())
        self.hardened = bool(used) and all(w.report["hardened"] for w in used)
        self.hardened_reason = (
            "every worker's probe verified the hardened layers"
            if self.hardened
            else "; ".join(
                f"{w.node}: {w.report['sandbox_reason']}" for w in used if not w.report["hardened"]
            )
        )
        self.info = {
            "executor": "ray",
            "versions": self.versions,
            "workers": [w.report for w in used],
            "refused": self.refused,
        }
        self._capacity_changed()

    def _problem(self, report: dict) -> str:
        if not report.get("ok"):
            return f"its sandbox worker did not start: {report.get('error', 'no message')}"
        if not report.get("hardened") and not self.options.allow_unhardened:
            return (
                "its self-check found no hardened sandbox (no network isolation): "
                f"{report.get('sandbox_reason')}. Fix the node (`tritonlab doctor` there), or set "
                "TRITONLAB_RAY_ALLOW_UNHARDENED=1 if every learner is trusted"
            )
        return versions.differences(self.versions, report.get("versions"))

    def _why_none(self) -> str:
        reasons = "; ".join(f"{r.get('node', 'a worker')}: {r['reason']}" for r in self.refused)
        return "no usable tritonlab worker in the Ray cluster" + (f" ({reasons})" if reasons else "")

    @property
    def capacity(self) -> int:
        """Runs at once on the usable workers: the sum of their slots."""
        with self._cond:
            return sum(w.slots for w in self.workers.values())

    def _capacity_changed(self) -> None:
        if self.on_capacity:
            self.on_capacity(self.capacity)

    def prefer(self, worker: WorkerRef) -> tuple:
        """Order of choice among workers with room: the least loaded first, then the least used (tests steer
        this)."""
        return (worker.busy / worker.slots, worker.runs)

    def acquire(
        self,
        exclude: set[str],
        timeout: float | None = None,
        exclusive: bool = False,
        idle_wait: float | None = None,
    ) -> WorkerRef:
        """A slot on a worker not in `exclude` (the workers this run tried already), in arrival order;
        `exclusive`: the whole worker (a run that times the GPU); `idle_wait`: the whole worker, but only an
        idle one, giving up with GpuBusy after that many seconds (slots.py). Raises WorkerLost when no such
        worker is left, or none had room within `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        idle_by = None if idle_wait is None else time.monotonic() + idle_wait
        want = Want(set(exclude), exclusive or idle_wait is not None, idle_only=idle_wait is not None)
        with self._cond:
            self._waiting.append(want)
            try:
                while True:
                    self._grant()
                    if want.worker is not None:
                        return want.worker
                    if not any(key not in exclude for key in self.workers):
                        raise WorkerLost("no other tritonlab worker is left in the cluster")
                    if deadline is not None and time.monotonic() > deadline:
                        raise WorkerLost("no other tritonlab worker became free in time")
                    if idle_by is not None and time.monotonic() > idle_by:
                        raise GpuBusy(f"no cluster worker was idle once in {idle_wait:.0f} s")
                    self._cond.wait(0.5)
            except BaseException:
                if want.worker is not None:  # granted in the same instant it gave up: give the slot back
                    self._give_back(want.worker)
                want.unclaim()
                if want in self._waiting:
                    self._waiting.remove(want)
                self._grant()
                raise

    def _grant(self) -> None:
        """Hand out what the rules allow now (caller holds the lock; slots.grant); wake the waiters if any."""
        if grant(self._waiting, list(self.workers.values()), self.prefer):
            self._cond.notify_all()

    def _give_back(self, worker: WorkerRef) -> None:
        if worker.alone:
            worker.busy, worker.alone = 0, False
        else:
            worker.busy = max(0, worker.busy - 1)

    def release(self, worker: WorkerRef) -> None:
        with self._cond:
            self._give_back(worker)
            self._grant()
            self._cond.notify_all()

    def forget(self, worker: WorkerRef) -> None:
        """A worker that was lost: never chosen again; its slots are gone with it."""
        with self._cond:
            self.workers.pop(worker.key, None)
            self._grant()  # a run that had claimed it claims another
            self._cond.notify_all()
        try:
            ray.kill(worker.handle)
        except Exception:  # noqa: BLE001 - it is gone already
            pass
        self._capacity_changed()

    # ---- Zygote-like face -----------------------------------------------------------------------------------

    def new_run_dir(self, cache: str = caches.LEARNER) -> tuple[Path, bool]:
        """A local run directory whose run will use compile cache `cache` on the worker (runs/caches.py:
        the learner's own, or the replay's for a mode that imports no learner file); no warm child here."""
        caches.check_name(cache)
        path = runfolder.new_run_dir()
        with self._cond:
            for gone in [p for p in self._cache_of if not p.exists()]:
                del self._cache_of[gone]
            self._cache_of[path] = cache
        return path, False

    def cache_for(self, run_dir: Path) -> str | None:
        with self._cond:
            return self._cache_of.pop(run_dir, None)

    def start(self, run_dir: Path, limits: Limits) -> RemoteRun:
        self.wait_ready()
        return RemoteRun(self, run_dir, limits)

    def check(self, spec: dict, timeout: float) -> RemoteCheck:
        """A whole check graded on a worker from its spec (service/remote_check.py); the worker is lost when
        no answer came within its runs' limits (the check's and the replay's, twice for a harness retry on
        the worker) and the grace."""
        self.wait_ready()
        return RemoteCheck(self, spec, Limits(wall_seconds=4 * timeout))

    def close(self) -> None:
        with self._cond:
            workers = list(self.workers.values())
            self.workers.clear()
            self._cond.notify_all()
        for worker in workers:
            try:
                ray.kill(worker.handle)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.dead = True
