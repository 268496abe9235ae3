"""Runs on a Ray cluster (`--executor ray`): one worker actor per GPU, or per `tritonlab_interpreter` unit.

Imported only when the ray executor is chosen (executor.open_remote). The server is a long-running Ray
driver that joins the cluster through the head's GCS (RAY_ADDRESS=HOST:PORT or `auto`); a one-off `check`
from a laptop may use Ray Client (ray://HOST:10001) instead. See docs/scale.md.

Worker (the actor, on a cluster node)
  - starts a warm local `sandbox.Zygote` for its backend with the full sandbox (hardening.decide, as
    locally), after a doctor-style self-check (which sandbox layers a probe verified, torch/triton versions,
    the node) that the driver reads with `hello()`; the zygote keeps warm single-use children (2 on a GPU,
    `TRITONLAB_POOL` from the server), under the hardened layer too: every run directory comes from the
    zygote (`Zygote.new_run_dir`), which binds a child to the next one ahead (pool.BoundPool);
  - `run(job_id, job, inputs, learner, limits)` writes the job into a run directory of its own node, runs it
    in its zygote, and returns plain data it builds itself: numbers, the output text, and the bytes of the
    plain files the run left (result.json, error.json, *.npy). Nothing a learner process produced is ever
    pickled: Ray pickles only this dict of bytes, str, int and bool; plus `timings`, where its time went;
  - is threaded (`max_concurrency`), so that `read_output(job_id, offset)` (live output) and `stop(job_id)`
    (kill the run's process tree, via the zygote) are served while `run` is busy. `ray.cancel` cannot
    interrupt a running actor method; this can.

RayPool (the driver, in the server or the CLI)
  - creates the actors, reads their self-checks and keeps only the usable ones: a worker whose sandbox is not
    hardened is refused unless the operator allowed it (TRITONLAB_RAY_ALLOW_UNHARDENED=1);
  - looks like a Zygote to the grader: `start(run_dir, limits)` returns a RemoteRun. RemoteRun.wait ships the
    run directory's job, inputs and the learner's file text, streams the output while polling, writes the
    returned files into the local run directory and hands it to `rundir.sanitize`, like a local run;
  - a worker lost mid-run (its node died) is forgotten and the run is retried once on another worker; when
    that fails too, WorkerLost says that nothing was graded.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ray
from ray import exceptions as ray_errors

from tritonlab import config
from tritonlab.runs import backend as backends
from tritonlab.runs import caches, hardening, pool, rundir, sandbox
from tritonlab.runs.executor import ExecutorError, RemoteOptions, WorkerLost

NAMESPACE = "tritonlab"
RESOURCES = {"interpreter": "tritonlab_interpreter", "gpu": "GPU"}
SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
RESERVED = {"job.json", "output.log"}
# in a shipped job: the compile cache its run uses (runs/caches.py), named by the server
CACHE_KEY = "run_cache"


def worker_cache(job: dict) -> str | None:
    """The compile cache a shipped job runs with (popped from it): the replay's only for a mode that imports no
    learner file, whatever the job says; a learner's own when named; otherwise (`replay` asked for a learner
    mode, a missing or bad name) none shared: the run compiles into its own directory, never another's cache."""
    named = job.pop(CACHE_KEY, None)
    if job.get("mode") in caches.TRUSTED_MODES:
        return caches.REPLAY
    try:
        if isinstance(named, str) and caches.kind(named) == caches.LEARNER:
            return named
    except ValueError:
        pass
    return None


MAX_SHIPPED_BYTES = 256 << 20  # inputs to a worker, and files back from it, per run
MAX_LEARNER_BYTES = 1 << 20
START_TIMEOUT_S = 180.0  # a worker's self-check and zygote start (torch + triton imports)
POLL_S = 0.1  # how often the driver asks for new output
GRACE_S = 30.0  # after the run's own wall-clock limit, how long the driver waits before calling it lost
RETRY_WAIT_S = 60.0  # how long a retry waits for another free worker
ACTOR_CONCURRENCY = 8
# What a lost worker looks like to the driver: its process or node died, or it cannot be reached.
LOST = (
    ray_errors.RayActorError,
    ray_errors.WorkerCrashedError,
    ray_errors.NodeDiedError,
    ray_errors.ObjectLostError,
)


# ---- the actor, on a cluster node ---------------------------------------------------------------------------


class _Job:
    """One run in a worker: its output so far, its sandbox run once started, and a Stop that came early."""

    def __init__(self) -> None:
        self.run: sandbox.Run | None = None
        self.stop_requested = False
        self.renamed: dict[str, str] = {}
        self._pieces: list[str] = []
        self._size = 0
        self._lock = threading.Lock()

    def append(self, text: str) -> None:
        for copy, original in self.renamed.items():
            text = text.replace(copy, original)
        with self._lock:
            self._pieces.append(text)
            self._size += len(text)

    def text(self, offset: int = 0) -> str:
        with self._lock:
            if len(self._pieces) > 1:
                self._pieces = ["".join(self._pieces)]
            return self._pieces[0][offset:] if self._pieces else ""


class Worker:
    """A tritonlab worker on one node (wrapped by `ray.remote` when the pool creates it)."""

    def __init__(self, backend: str, sandbox_mode: str | None = None, pool_size: str | None = None) -> None:
        if sandbox_mode:  # the server's explicit TRITONLAB_SANDBOX applies to its workers too
            os.environ["TRITONLAB_SANDBOX"] = sandbox_mode
        if pool_size:  # and so does its explicit TRITONLAB_POOL
            os.environ["TRITONLAB_POOL"] = pool_size
        self.backend = backend
        self._jobs: dict[str, _Job] = {}
        self._early_stops: list[str] = []  # Stops that arrived before their run (methods run concurrently)
        self._lock = threading.Lock()
        self._zygote_lock = threading.Lock()
        # The zygote is started from one long-lived thread: a child's parent-death signal follows the thread
        # that started it, and actor method threads come and go.
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tritonlab-zygote")
        self.zygote: sandbox.Zygote | None = None
        self.report = self._self_check()

    def _self_check(self) -> dict:
        context = ray.get_runtime_context()
        report: dict = {
            "node_id": context.get_node_id(),
            "hostname": socket.gethostname(),
            "ip": ray.util.get_node_ip_address(),
            "pid": os.getpid(),
            "actor": context.get_actor_id(),
            "backend": self.backend,
            "ok": False,
        }
        probe = hardening.probe(self.backend)
        try:
            hardened, reason = hardening.decide(self.backend)
        except hardening.Unavailable as exc:
            hardened, reason = False, str(exc)
        report.update({"hardened": hardened, "sandbox_reason": reason, "layers": list(probe["layers"])})
        if self.backend == "gpu":
            report["gpu"] = {
                k: v for k, v in backends.probe_gpu().items() if isinstance(v, str | bool | None)
            }
        # Warm single-use children, as a local server keeps them (pool.py): on a GPU each run finds a child
        # with its CUDA context made. Hardened too: this worker takes every run directory from its zygote
        # (Zygote.new_run_dir), so the child can isolate itself into the next one ahead (pool.BoundPool).
        self.pool_size = pool.wanted(self.backend, hardened, bound=True)
        report["pool"] = self.pool_size
        try:
            self.zygote = self._new_zygote(hardened)
            info = self.zygote.wait_ready(START_TIMEOUT_S)
        except (sandbox.SandboxError, hardening.Unavailable, OSError) as exc:
            report["error"] = str(exc)
            return report
        report["zygote"] = {k: info.get(k) for k in ("torch", "triton", "python", "import_seconds")}
        report["ok"] = True
        return report

    def _new_zygote(self, hardened: bool) -> sandbox.Zygote:
        return self._starter.submit(
            lambda: sandbox.Zygote(self.backend, hardened, pool=self.pool_size)
        ).result()

    def hello(self) -> dict:
        return self.report

    def _ready_zygote(self) -> sandbox.Zygote:
        with self._zygote_lock:  # concurrent methods: one replacement for a dead zygote, not one each
            if self.zygote is None or self.zygote.dead:  # it died (or never started): start a fresh one
                if self.zygote is not None:
                    self.zygote.close()
                self.zygote = self._new_zygote(bool(self.report["hardened"]))
            zygote = self.zygote
        zygote.wait_ready(START_TIMEOUT_S)
        return zygote

    def run(self, job_id: str, job: dict, inputs: dict, learner: dict | None, limits: dict) -> dict:
        """Run one job; besides the result, `timings` says where this worker's time went (seconds)."""
        began = time.monotonic()
        entry = _Job()
        with self._lock:
            self._jobs[job_id] = entry
            if job_id in self._early_stops:
                self._early_stops.remove(job_id)
                entry.stop_requested = True
        staging: Path | None = None
        run_dir: Path | None = None
        try:
            zygote = self._ready_zygote()
            job = dict(job)
            run_dir, warm = zygote.new_run_dir(cache=worker_cache(job))
            timings = {"zygote_s": time.monotonic() - began, "warm_child": warm}
            for name, data in inputs.items():
                if not SAFE_NAME.match(name) or name in RESERVED:
                    raise ValueError(f"refusing input file name {name!r}")
                (run_dir / name).write_bytes(data)
            if learner is not None:
                staging = Path(tempfile.mkdtemp(prefix="learner-", dir=config.runs_dir()))
                name = learner["name"] if SAFE_NAME.match(learner["name"]) else "learner.py"
                copy = staging / name
                copy.write_bytes(learner["data"])
                job["file"] = str(copy)
                entry.renamed = {str(copy): learner["original"]}
            (run_dir / "job.json").write_text(json.dumps(job))
            fields = {f.name for f in dataclasses.fields(sandbox.Limits)}
            timings["inputs_s"] = time.monotonic() - began - timings["zygote_s"]
            run = zygote.start(run_dir, sandbox.Limits(**{k: v for k, v in limits.items() if k in fields}))
            entry.run = run
            if entry.stop_requested:
                run.stop()
            result = run.wait(entry.append)
            rundir.restore_names(run_dir, entry.renamed)
            collected = time.monotonic()
            files = collect(run_dir, set(inputs))
            timings |= {"run_s": result.seconds, "collect_s": time.monotonic() - collected}
            timings["worker_s"] = time.monotonic() - began
            return {
                "exit_code": None if result.exit_code is None else int(result.exit_code),
                "signal": None if result.signal is None else int(result.signal),
                "timed_out": bool(result.timed_out),
                "stopped": bool(result.stopped),
                "output_truncated": bool(result.output_truncated),
                "seconds": float(result.seconds),
                "output": entry.text(),
                "files": files,
                "timings": {k: round(v, 4) if isinstance(v, float) else v for k, v in timings.items()},
            }
        finally:
            with self._lock:
                self._jobs.pop(job_id, None)
            if run_dir is not None:
                sandbox.remove_run_dir(run_dir)
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)

    def read_output(self, job_id: str, offset: int) -> str:
        with self._lock:
            entry = self._jobs.get(job_id)
        return entry.text(max(0, int(offset))) if entry else ""

    def stop(self, job_id: str) -> bool:
        with self._lock:
            entry = self._jobs.get(job_id)
            if entry is None:
                self._early_stops = [*self._early_stops[-99:], job_id]
                return False
        entry.stop_requested = True
        if entry.run is not None:
            entry.run.stop()
        return True

    def close(self) -> None:
        if self.zygote is not None:
            self.zygote.close()


def collect(run_dir: Path, sent: set[str]) -> dict[str, bytes]:
    """The bytes of the plain top-level files a run left (not its inputs, job or log), up to a total cap.
    The run directory was sanitized by Run.wait, so there are no links or FIFOs to follow."""
    files: dict[str, bytes] = {}
    total = 0
    for entry in sorted(os.scandir(run_dir), key=lambda e: e.name):
        if entry.name in RESERVED or entry.name in sent or not SAFE_NAME.match(entry.name):
            continue
        if not entry.is_file(follow_symlinks=False):
            continue
        size = entry.stat(follow_symlinks=False).st_size
        if total + size > MAX_SHIPPED_BYTES:
            continue  # what does not come back counts as missing: vet_result marks its case tampered
        with open(entry.path, "rb") as f:
            files[entry.name] = f.read(size)
        total += size
    return files


# ---- the driver, in the server or the CLI ---------------------------------------------------------------


def label(report: dict) -> str:
    return f"{report.get('hostname', '?')} ({report.get('ip', '?')}, ray node {str(report.get('node_id', ''))[:8]})"


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


class WorkerRef:
    def __init__(self, handle: object, report: dict) -> None:
        self.handle = handle
        self.report = report
        self.key = report["actor"]
        self.node = label(report)
        self.runs = 0


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
        self.dead = False
        self.on_capacity: Callable[[int], None] | None = None
        self._free: list[WorkerRef] = []
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
        placement = {"num_gpus": 1} if self.backend == "gpu" else {"resources": {self.resource: 1}}
        actor_class = ray.remote(Worker)
        handles = [
            actor_class.options(
                num_cpus=0,
                max_concurrency=ACTOR_CONCURRENCY,
                max_restarts=0,
                scheduling_strategy="SPREAD",
                **placement,
            ).remote(self.backend, os.environ.get("TRITONLAB_SANDBOX"), os.environ.get("TRITONLAB_POOL"))
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
            self._free.append(worker)
        used = list(self.workers.values())
        self.hardened = bool(used) and all(w.report["hardened"] for w in used)
        self.hardened_reason = (
            "every worker's probe verified the hardened layers"
            if self.hardened
            else "; ".join(
                f"{w.node}: {w.report['sandbox_reason']}" for w in used if not w.report["hardened"]
            )
        )
        self.info = {"executor": "ray", "workers": [w.report for w in used], "refused": self.refused}
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
        return ""

    def _why_none(self) -> str:
        reasons = "; ".join(f"{r.get('node', 'a worker')}: {r['reason']}" for r in self.refused)
        return "no usable tritonlab worker in the Ray cluster" + (f" ({reasons})" if reasons else "")

    @property
    def capacity(self) -> int:
        with self._cond:
            return len(self.workers)

    def _capacity_changed(self) -> None:
        if self.on_capacity:
            self.on_capacity(len(self.workers))

    def prefer(self, worker: WorkerRef) -> tuple:
        """Order of choice among free workers: the least used first (tests steer this)."""
        return (worker.runs,)

    def acquire(self, exclude: set[str], timeout: float | None = None) -> WorkerRef:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                choices = [w for w in self._free if w.key not in exclude]
                if choices:
                    worker = min(choices, key=self.prefer)
                    self._free.remove(worker)
                    worker.runs += 1
                    return worker
                if not any(key not in exclude for key in self.workers):
                    raise WorkerLost("no other tritonlab worker is left in the cluster")
                if deadline is not None and time.monotonic() > deadline:
                    raise WorkerLost("no other tritonlab worker became free in time")
                self._cond.wait(0.5)

    def release(self, worker: WorkerRef) -> None:
        with self._cond:
            if worker.key in self.workers:
                self._free.append(worker)
            self._cond.notify_all()

    def forget(self, worker: WorkerRef) -> None:
        """A worker that was lost: never chosen again."""
        with self._cond:
            self.workers.pop(worker.key, None)
            if worker in self._free:
                self._free.remove(worker)
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
        path = sandbox.new_run_dir()
        with self._cond:
            for gone in [p for p in self._cache_of if not p.exists()]:
                del self._cache_of[gone]
            self._cache_of[path] = cache
        return path, False

    def cache_for(self, run_dir: Path) -> str | None:
        with self._cond:
            return self._cache_of.pop(run_dir, None)

    def start(self, run_dir: Path, limits: sandbox.Limits) -> RemoteRun:
        self.wait_ready()
        return RemoteRun(self, run_dir, limits)

    def close(self) -> None:
        with self._cond:
            workers = list(self.workers.values())
            self.workers.clear()
            self._free.clear()
        for worker in workers:
            try:
                ray.kill(worker.handle)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.dead = True


class _Lost(Exception):
    pass


class RemoteRun:
    """One job on a cluster worker, with the face of sandbox.Run: `wait(on_output)`, `stop()`."""

    def __init__(self, pool: RayPool, run_dir: Path, limits: sandbox.Limits) -> None:
        self.pool, self.run_dir, self.limits = pool, run_dir, limits
        self.cache = pool.cache_for(run_dir)  # None: a run directory from elsewhere, no shared cache
        self.id = uuid.uuid4().hex
        self.node = ""
        self.attempts: list[str] = []  # the nodes tried, in order
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._worker: WorkerRef | None = None
        self._shown: list[str] = []  # what this attempt streamed so far
        self._before = ""  # what earlier, lost attempts showed, and the note that they were lost
        self.timings: dict = {}  # driver side, seconds; the worker's own come back in its reply

    def stop(self) -> None:
        self._stop.set()
        worker = self._worker
        if worker is not None:
            worker.handle.stop.remote(self.id)

    def _payload(self) -> tuple[dict, dict[str, bytes], dict | None]:
        job = json.loads((self.run_dir / "job.json").read_text())
        job[CACHE_KEY] = self.cache
        inputs, total = {}, 0
        for entry in sorted(os.scandir(self.run_dir), key=lambda e: e.name):
            if entry.name in RESERVED or not entry.is_file(follow_symlinks=False):
                continue
            total += entry.stat(follow_symlinks=False).st_size
            if total > MAX_SHIPPED_BYTES or not SAFE_NAME.match(entry.name):
                raise ExecutorError(f"cannot ship {entry.name!r} to a worker (name or size)")
            inputs[entry.name] = Path(entry.path).read_bytes()
        learner = None
        if isinstance(job.get("file"), str):
            path = Path(job["file"])
            data = path.read_bytes()
            if len(data) > MAX_LEARNER_BYTES:
                raise ExecutorError(f"{path} is larger than {MAX_LEARNER_BYTES} bytes")
            learner = {"name": path.name, "data": data, "original": str(path)}
        return job, inputs, learner

    def wait(self, on_output: Callable[[str], None] | None = None) -> sandbox.RunResult:
        emit = on_output or (lambda _text: None)
        began = time.monotonic()
        job, inputs, learner = self._payload()
        self.timings["payload_s"] = time.monotonic() - began
        self.timings["payload_mb"] = sum(len(v) for v in inputs.values()) / 1e6
        limits = dataclasses.asdict(self.limits)
        tried: set[str] = set()
        while True:
            asked = time.monotonic()
            worker = self.pool.acquire(tried, None if not tried else RETRY_WAIT_S)
            self.timings["worker_wait_s"] = self.timings.get("worker_wait_s", 0.0) + time.monotonic() - asked
            self._worker, self.node = worker, worker.node
            self.attempts.append(worker.node)
            try:
                sent = time.monotonic()
                reply = self._attempt(worker, job, inputs, learner, limits, emit)
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

    def _attempt(
        self,
        worker: WorkerRef,
        job: dict,
        inputs: dict,
        learner: dict | None,
        limits: dict,
        emit: Callable[[str], None],
    ) -> dict:
        self._shown = []
        ref = worker.handle.run.remote(self.id, job, inputs, learner, limits)
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
            raise sandbox.SandboxError(f"the worker on {worker.node} failed: {exc}") from None
        output = reply.get("output", "")
        if len(output) > shown:
            emit(output[shown:])
        return reply

    def _land(self, reply: dict) -> sandbox.RunResult:
        """Write what came back into the local run directory, then validate it exactly like a local run."""
        landed = time.monotonic()
        for name, data in dict(reply.get("files", {})).items():
            if not isinstance(name, str) or not SAFE_NAME.match(name) or name in RESERVED:
                continue
            if not isinstance(data, bytes):
                continue
            target = self.run_dir / name
            if target.is_dir() and not target.is_symlink():
                continue
            target.unlink(missing_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        rundir.sanitize(self.run_dir)
        self.timings["land_s"] = time.monotonic() - landed
        worker = reply.get("timings")
        if isinstance(worker, dict):  # numbers only: the worker built them, the learner's run did not
            for key, value in worker.items():
                if isinstance(key, str) and isinstance(value, int | float | bool):
                    self.timings[f"worker.{key}"] = value
        self.timings["attempts"] = len(self.attempts)

        def number(key: str) -> int | None:
            value = reply.get(key)
            return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

        return sandbox.RunResult(
            run_dir=self.run_dir,
            exit_code=number("exit_code"),
            signal=number("signal"),
            timed_out=reply.get("timed_out") is True,
            stopped=reply.get("stopped") is True,
            output_truncated=reply.get("output_truncated") is True,
            output=self._before + str(reply.get("output", "")),
            seconds=float(reply.get("seconds") or (time.monotonic() - self.started)),
            timings={k: round(v, 4) if isinstance(v, float) else v for k, v in self.timings.items()},
        )
