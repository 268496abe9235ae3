"""The worker actor, on a cluster node: one per GPU, or per `tritonlab_interpreter` unit (wrapped by
`ray.remote` when the driver creates it: driver.RayPool).

- It takes several runs at once: its `slots`, computed on its own node with the local executor's rules
  (runs/capacity.py: cores, host memory, GPU memory over the soft cap; the server's TRITONLAB_SLOTS passed to
  it overrides), reported in its self-check; the driver gives it at most that many runs at once, and a run
  that times the GPU alone (driver.RayPool.acquire). Each run keeps its own process, sandbox and cgroup.
- It starts a warm local `sandbox.Zygote` for its backend with the full sandbox (hardening.decide, as
  locally), after a doctor-style self-check (which sandbox layers a probe verified, torch/triton versions,
  the node, its slots) that the driver reads with `hello()`; the zygote keeps warm single-use children
  (slots + 1 on a GPU, `TRITONLAB_POOL` from the server), under the hardened layer too: every run directory
  comes from the zygote (`Zygote.new_run_dir`), which binds a child to the next one ahead (pool.BoundPool).
- `run(job_id, job, inputs, learner, limits)` writes the job into a run directory of its own node, runs it
  in its zygote, and returns plain data it builds itself (transfer.reply), plus `timings`, where its time
  went.
- `check(job_id, spec)` grades a whole check from its spec (exercise, seed, text; no case data) with the
  same check pipeline as a local check, found by name (`CHECK_ENTRY`), and returns the verdict data.
- Its self-check reports its course and code versions (versions.py); the driver refuses a worker whose
  versions differ from its own.
- It is threaded (`max_concurrency`: its slots' runs, and beside them `read_output(job_id, offset)` (live
  output) and `stop(job_id)` (kill the run's process tree, via the zygote), served while runs are busy). `ray.cancel` cannot
  interrupt a running actor method; this can.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ray

from tritonlab.runs import backend as backends
from tritonlab.runs import capacity, hardening, pool, rundir, runfolder, sandbox
from tritonlab.runs.collect import Run
from tritonlab.runs.ray_executor import transfer, versions

START_TIMEOUT_S = 180.0  # a worker's self-check and zygote start (torch + triton imports)
# What grades a whole check on this node, by name: the service's side of it (service/remote_check.py).
CHECK_ENTRY = "tritonlab.service.remote_check:grade_on_worker"


class _Job:
    """One run in a worker: its output so far, its sandbox run once started, and a Stop that came early."""

    def __init__(self) -> None:
        self.run: Run | None = None
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

    def __init__(
        self,
        backend: str,
        sandbox_mode: str | None = None,
        pool_size: str | None = None,
        slots: str | None = None,
    ) -> None:
        if sandbox_mode:  # the server's explicit TRITONLAB_SANDBOX applies to its workers too
            os.environ["TRITONLAB_SANDBOX"] = sandbox_mode
        if pool_size:  # and so does its explicit TRITONLAB_POOL
            os.environ["TRITONLAB_POOL"] = pool_size
        if slots:  # and its explicit TRITONLAB_SLOTS
            os.environ[capacity.ENV] = slots
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
        gpu = backends.probe_gpu() if self.backend == "gpu" else None
        if gpu is not None:
            report["gpu"] = {k: v for k, v in gpu.items() if isinstance(v, str | bool | None)}
        try:  # runs at once on this node, by the local executor's rules (runs/capacity.py)
            slots = capacity.slots(self.backend, gpu)
        except capacity.SlotsError as exc:
            report["error"] = str(exc)
            return report
        report["slots"], report["slots_reason"] = slots.count, slots.reason
        # Warm single-use children, as a local server keeps them (pool.py): on a GPU each run finds a child
        # with its CUDA context made. Hardened too: this worker takes every run directory from its zygote
        # (Zygote.new_run_dir), so the child can isolate itself into the next one ahead (pool.BoundPool).
        self.pool_size = pool.wanted(self.backend, hardened, slots.count, bound=True)
        report["pool"] = self.pool_size
        try:
            self.zygote = self._new_zygote(hardened)
            info = self.zygote.wait_ready(START_TIMEOUT_S)
        except (sandbox.SandboxError, hardening.Unavailable, OSError) as exc:
            report["error"] = str(exc)
            return report
        report["zygote"] = {k: info.get(k) for k in ("torch", "triton", "python", "import_seconds")}
        report["versions"] = versions.local()  # the driver refuses a worker whose course or code differs
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

    def _register(self, job_id: str) -> _Job:
        entry = _Job()
        with self._lock:
            self._jobs[job_id] = entry
            if job_id in self._early_stops:
                self._early_stops.remove(job_id)
                entry.stop_requested = True
        return entry

    def check(self, job_id: str, spec: dict) -> dict:
        """Grade one check from its spec (exercise, seed, text, versions) with this node's zygote: the same
        check pipeline as a local check, found by name (CHECK_ENTRY: the sandbox stays below the grader, as the
        zygote's ENTRIES do). Returns plain data: the verdict as JSON text and the output, bounded
        (service/remote_check.py), and `timings`."""
        began = time.monotonic()
        entry = self._register(job_id)

        def started(run: Run) -> None:  # the check child: what Stop ends
            entry.run = run
            if entry.stop_requested:
                run.stop()

        try:
            zygote = self._ready_zygote()
            waited = time.monotonic() - began
            module, _, name = CHECK_ENTRY.partition(":")
            grade = getattr(importlib.import_module(module), name)
            reply = grade(spec, zygote, self._ready_zygote, started, entry.append)
            reply["timings"] = {"zygote_s": round(waited, 4), "worker_s": round(time.monotonic() - began, 4)}
            return reply
        finally:
            with self._lock:
                self._jobs.pop(job_id, None)

    def run(self, job_id: str, job: dict, inputs: dict, learner: dict | None, limits: dict) -> dict:
        """Run one job; besides the result, `timings` says where this worker's time went (seconds)."""
        began = time.monotonic()
        entry = self._register(job_id)
        staging: Path | None = None
        run_dir: Path | None = None
        try:
            zygote = self._ready_zygote()
            job = dict(job)
            run_dir, warm = zygote.new_run_dir(cache=transfer.worker_cache(job))
            timings = {"zygote_s": time.monotonic() - began, "warm_child": warm}
            transfer.write_inputs(run_dir, inputs)
            if learner is not None:
                staging, copy = transfer.stage_learner(learner)
                job["file"] = str(copy)
                entry.renamed = {str(copy): learner["original"]}
            (run_dir / "job.json").write_text(json.dumps(job))
            timings["inputs_s"] = time.monotonic() - began - timings["zygote_s"]
            run = zygote.start(run_dir, transfer.limits_from(limits))
            entry.run = run
            if entry.stop_requested:
                run.stop()
            result = run.wait(entry.append)
            rundir.restore_names(run_dir, entry.renamed)
            collected = time.monotonic()
            files = transfer.collect(run_dir, set(inputs))
            timings |= {"run_s": result.seconds, "collect_s": time.monotonic() - collected}
            timings["worker_s"] = time.monotonic() - began
            return transfer.reply(result, entry.text(), files, timings)
        finally:
            with self._lock:
                self._jobs.pop(job_id, None)
            if run_dir is not None:
                runfolder.remove_run_dir(run_dir)
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
