"""The workers a `Service` runs on: which backend (decided once), one warm zygote per backend on this machine or
the Ray pool of a cluster (`executor="ray"`), the hardened sandbox layer decided and probed beside the first
worker's start, the fair gate of each backend, warming up and closing. Mixed into `Service` (facade.py),
whose constructor sets the attributes these methods share."""

from __future__ import annotations

import threading

from tritonlab import config
from tritonlab.runs import backend as backends
from tritonlab.runs import capacity, hardening, pool, sandbox
from tritonlab.runs import executor as executors
from tritonlab.runs.cgroups import proof
from tritonlab.service.gate import FairGate


class Workers:
    """The backend, the zygotes (or the Ray pool), the gates: what every kind of run goes through."""

    @property
    def choice(self) -> backends.Choice:
        if self._choice is None:
            if self.executor == "local":
                self._choice = backends.choose(self.requested_backend)
            else:  # the cluster's workers decide what runs, not this machine
                self._choice = self.remote().choice
        return self._choice

    @property
    def backend(self) -> str:
        return self.choice.backend

    def remote(self):  # noqa: ANN201 - the executor's pool (ray_executor.driver.RayPool), imported only when chosen
        """The remote executor's worker pool, joined on first use (executor != local)."""
        with self._remote_lock:
            if self._remote is None:
                try:  # imported only when chosen: the CLI's start-up never imports ray
                    from tritonlab.runs.ray_executor import driver as ray_driver
                except ImportError as exc:
                    raise executors.ExecutorError(
                        f"--executor ray needs Ray on this machine ({exc}): `pip install 'tritonlab[ray]'`"
                    ) from None
                self._remote = ray_driver.RayPool(self.requested_backend, self._remote_options)
            return self._remote

    def zygote(self) -> sandbox.Zygote:
        if self.executor != "local":
            cluster = self.remote()
            cluster.wait_ready()  # its workers' self-checks say whether the sandbox is hardened
            self.hardened, self.hardened_reason = cluster.hardened, cluster.hardened_reason
            return cluster
        return self._local_zygote(self.backend)

    def warm_counts(self) -> dict | None:
        """The local worker's warm children so far (sandbox.Zygote.warm_counts: made, taken, ready ahead,
        dropped unused); None before it started or with a cluster. Never starts a worker."""
        with self._lock:
            z = self._zygotes.get(self.backend)
        return dict(z.warm_counts) if z is not None and self.executor == "local" else None

    def _local_zygote(self, backend: str) -> sandbox.Zygote:
        with self._lock:
            z = self._zygotes.get(backend)
            if z is None or z.dead:
                if z is not None:
                    z.close()  # a worker that died: release what it held (its shared runs-folder mount)
                # Layer 2 when the machine allows it (TRITONLAB_SANDBOX=auto|hardened|basic; see hardening.py).
                early = self._hardened_beside_probe(backend)
                try:
                    self.hardened, self.hardened_reason = hardening.decide(backend)
                except hardening.Unavailable:
                    if early is not None:
                        early.close()
                    raise
                if early is not None and self.hardened:
                    self._zygotes[backend] = early
                    return early
                if early is not None:
                    early.close()  # the probe said no: nothing ever ran in it
                if not self.hardened and backend == "gpu" and self.on_unhardened is not None:
                    self.on_unhardened(
                        "WARNING: GPU runs use sandbox layer 1 only (your own code on your own machine is "
                        f"fine; do not run other people's code): {self.hardened_reason}"
                    )
                z = self._new_zygote(backend, bool(self.hardened))
                self._zygotes[backend] = z
            return z

    def _hardened_beside_probe(self, backend: str) -> sandbox.Zygote | None:
        """The first worker of a process: while the hardened layer's probe runs (a sandbox started, torch
        imported, on a GPU a kernel compiled and launched in it: seconds), start the hardened worker too, so
        that its imports overlap the probe. It is used only if the probe then proves the layer (the caller
        decides, and closes it otherwise); nothing runs in it before. None when the probe's answer is known
        already, or the layer is switched off or cannot start here."""
        if hardening.mode() == "basic" or hardening.probed(backend) is not None or not hardening.find_bwrap():
            return None
        probing = threading.Thread(target=hardening.probe, args=(backend,), name="sandbox-probe", daemon=True)
        probing.start()
        try:
            early = self._new_zygote(backend, hardened=True)
        except (hardening.Unavailable, sandbox.SandboxError, OSError):
            early = None
        probing.join()
        return early

    def _new_zygote(self, backend: str, hardened: bool) -> sandbox.Zygote:
        # every run directory comes from the zygote (Zygote.new_run_dir): warm children under the hardened
        # layer too, each bound ahead to a run's directory and compile cache (pool.BoundPool)
        return sandbox.Zygote(
            backend,
            hardened=hardened,
            read_only=(self.workspace.root,) if self.sandbox_reads_workspace else (),
            hidden=tuple(e.solution for e in self.course.exercises()),
            pool=pool.wanted(backend, hardened, self.run_slots(backend).count, bound=True),
        )

    def private_workspaces(self) -> None:
        """Classroom mode: runs read no shared workspace folder (each learner's file is copied into their own
        run directory). A local worker already started with the folder bound is replaced."""
        if not self.sandbox_reads_workspace:
            return
        self.sandbox_reads_workspace = False
        with self._lock:
            started, self._zygotes = list(self._zygotes.values()), {}
        for zygote in started:
            zygote.close()

    def run_limits(self) -> dict:
        """Per-run cgroups: whether runs get them, and which limits a probe saw stop something."""
        zygote = self._zygotes.get(self.backend)
        report = proof.report(bool(zygote.hardened) if zygote is not None else bool(self.hardened))
        if zygote is not None and not zygote.run_cgroups:  # the worker started without them
            report = report | {
                "per_run_cgroups": False,
                "memory_limit": False,
                "complete": False,
                "active": [],
                "reason": "the worker places runs in no cgroup",
            }
        return report

    def warm_up(self) -> None:
        """Start the worker now (in the background), so the first run does not wait for imports. When the GPU
        was asked for by name and its probe is not answered yet (a subprocess creating a CUDA context: seconds),
        the probe runs in a thread while the GPU worker starts — and, on a process's first worker, while the
        sandbox's own probe runs (hardening.py: a kernel launched inside bubblewrap, seconds too; the two ran
        one after the other before, most of a first check's start on the H200). A probe that finds no usable
        GPU raises BackendError as before, and the worker started for nothing is closed."""
        wanted = (self.requested_backend or config.default_backend()).lower()
        if self.executor == "local" and self._choice is None and wanted == "gpu":
            answer: dict[str, BaseException] = {}

            def probe_gpu() -> None:
                try:
                    _ = self.choice
                except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread below
                    answer["error"] = exc

            probing = threading.Thread(target=probe_gpu, name="gpu-probe", daemon=True)
            probing.start()
            try:
                early = self._local_zygote("gpu")
            finally:
                probing.join()
            if "error" in answer:
                with self._lock:
                    self._zygotes.pop("gpu", None)
                early.close()
                raise answer["error"]
        self.zygote()

    def run_slots(self, backend: str | None = None) -> capacity.Slots:
        """Runs at once on `backend` (default this service's) on this machine: `slots` when set (`dev check
        --jobs`), else what the machine has room for (runs/capacity.py; TRITONLAB_SLOTS overrides)."""
        backend = backend or self.backend
        if self.slots:
            return capacity.Slots(self.slots, f"{self.slots} at once, as asked")
        return capacity.slots(backend, self.choice.gpu if backend == "gpu" else None)

    def gate(self) -> FairGate:
        """The one run queue of this service's backend: every kind of run waits in it (check.py, jobs.py,
        viz/run.py), each learner holding at most one slot, GPU-timing runs alone (gate.py)."""
        with self._lock:
            gate = self._gates.get(self.backend)
        if gate is not None:
            return gate
        if self.executor != "local":  # the cluster workers' slots, summed; lost workers shrink it
            size = max(1, self._remote.capacity)
        else:
            size = self.run_slots().count  # outside the lock: it may ask nvidia-smi
        with self._lock:
            if self.backend not in self._gates:
                gate = FairGate(size)
                if self.executor != "local":
                    self._remote.on_capacity = lambda n: setattr(gate, "size", max(1, n))
                self._gates[self.backend] = gate
            return self._gates[self.backend]

    def exclusive_runs(self) -> bool:
        """Whether a run that times the GPU (capacity.times_gpu) waits in this queue's exclusive class: on this
        machine's GPU. On a cluster the queue holds the workers' slots summed, and such a run takes its worker
        alone in the pool instead (ray_executor/driver.py: RayPool.acquire); the interpreter times nothing."""
        return self.executor == "local" and self.backend == "gpu"

    def close(self) -> None:
        with self._lock:
            for z in self._zygotes.values():
                z.close()
            self._zygotes.clear()
            if self._remote is not None:
                self._remote.close()
