"""PARENT side of the sandbox: the warm zygote worker that every run is forked from, and its jobs.

Learner code never runs in the CLI or server process (an out-of-bounds store on the interpreter corrupts the
heap of the process that ran it; on a GPU it poisons the CUDA context). `Zygote` starts a worker that imports
torch and triton once (from one long-lived thread: `_Spawner`) and forks a fresh child per job from it (layer
1): a new session whose whole tree is killed on timeout or Stop, the limits of limits.py, its own run directory
(runfolder.py), read afterwards without trusting it (rundir.py). `Zygote.start` returns the run's handle
(collect.Run). With per-run cgroups (cgroups/) each run is held until the parent placed it in its own.
Layer 2 (hardening.py, `hardened=True`): the zygote runs inside bubblewrap as an unprivileged user, so every
run inherits it; with a pool, run directories are made ahead, each with a warm child bound to it and to one
compile cache (caches.warm_plan, pool.BoundPool).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from tritonlab import config
from tritonlab.runs import caches, hardening, jail, rundir, runfolder
from tritonlab.runs.cgroups import hierarchy, proof, rungroup
from tritonlab.runs.collect import Run
from tritonlab.runs.limits import Limits, child_environment, default_run_pids
from tritonlab.runs.warm_dirs import WarmDirs


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the learner's code): says what to do."""


def _job_file(run_dir: Path) -> str:
    """The file a job runs (resolved), so that the server can still check a reference solution itself."""
    try:
        file = json.loads((run_dir / "job.json").read_text()).get("file")
    except (OSError, ValueError):
        return ""
    return str(Path(file).resolve()) if isinstance(file, str) else ""


class _Spawner:
    """Starts worker processes from one thread that lives as long as this process.

    The zygote asks for SIGKILL when its parent dies (PR_SET_PDEATHSIG), and so does bubblewrap's
    `--die-with-parent` for the jail around it; Linux sends that signal when the *thread* that forked the
    process ends, not the process. A worker started from a short-lived thread — the check daemon's start-up
    thread, a web server's pooled request thread that is retired when idle — would be killed (or, hardened,
    lose the jail's monitor process, so that its runs can no longer be found and placed in their cgroups)
    as soon as that thread ends. Starting every worker from this one thread ties them to the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None

    def _serve(self) -> None:
        while True:
            args, kwargs, done = self._jobs.get()
            try:
                done["proc"] = subprocess.Popen(args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there
                done["error"] = exc
            done["event"].set()

    def popen(self, args: list[str], **kwargs) -> subprocess.Popen:  # noqa: ANN003 - subprocess.Popen's
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="worker-spawner", daemon=True)
                self._thread.start()
        done: dict = {"event": threading.Event()}
        self._jobs.put((args, kwargs, done))
        done["event"].wait()
        if "error" in done:
            raise done["error"]
        return done["proc"]


SPAWNER = _Spawner()


class Zygote(WarmDirs):
    """A warm `python -m tritonlab.runs.zygote BACKEND` process; thread-safe. Hardened with a pool, its run
    directories made ahead with a warm child in each come from WarmDirs (warm_dirs.py)."""

    def __init__(
        self,
        backend: str,
        hardened: bool = False,
        read_only: tuple[Path, ...] = (),
        hidden: tuple[Path, ...] = (),
        run_cgroups: bool | None = None,
        pool: int = 0,
    ) -> None:
        """`run_cgroups=True` puts each run in its own cgroup (cgroups/) before it runs anything (None:
        when this machine allows it, see cgroups.proof.proven);
        `hardened=True` starts it inside bubblewrap (hardening.py; raises hardening.Unavailable if it
        cannot); `read_only` adds folders (the learner's workspace) that runs may read in place; `hidden`
        adds files (reference solutions) that runs may never read, besides the course's own; `pool` keeps
        that many warm single-use children (runs/pool.py). Hardened, those children are bound to run
        directories the zygote makes ahead (`new_run_dir`): only runs in such directories start warm."""
        self.backend = backend
        self.hardened = hardened
        # Per-run cgroups only where a probe saw them stop something (cgroups.proof.probe, cached per process): a
        # machine where the folders are writable but placement or the limits do not work (seen on a GPU host
        # under gVisor) must not hold every run waiting for a placement that never comes. The probe runs
        # beside the worker's start-up (torch and triton take longer to import), so it costs no latency.
        self._cgroups_wanted = run_cgroups
        self.cgroup_controllers: tuple[str, ...] | None = None  # the proven ones a run's cgroup uses
        self._cgroups_probe: threading.Thread | None = None
        if run_cgroups is None:
            self._cgroups_probe = threading.Thread(
                target=proof.proven, args=(hardened,), name="cgroup-probe", daemon=True
            )
            self._cgroups_probe.start()
        self.pool = pool
        # Hardened: run directories made ahead, each with a warm child isolated into it (pool.BoundPool) and
        # bound to one compile cache (runs/caches.py), as (directory, cache name); handed out by new_run_dir()
        # and not yet started (a caller that gives one up without a run: the next new_run_dir() sees it
        # removed and ends its child). Warm children are kept for the caches asked for most recently.
        self._warm_dirs: list[tuple[Path, str]] = []
        self._handed: set[Path] = set()
        self._cache_of: dict[Path, str] = {}  # run directory -> its cache name, from new_run_dir() to start()
        self._cache_use: dict[str, int] = {}  # cache name -> runs using it now (a cache is emptied only at 0)
        self._cache_paths: set[Path] = set()  # the cache folders this worker's runs used (released at close)
        self._refilling = threading.Lock()
        self._recent: list[str] = [caches.LEARNER, caches.REPLAY]  # the caches asked for, most recent first
        self._expected: dict[str, float] = {}  # caches a run is expected for soon (expect), until when
        # warm children forked, taken by a run (made before the request that took it: ready ahead), and
        # dropped unused; read by /api/status and scripts/load_gpu.py (benchmarks/warm_plan.py counts alike)
        self.warm_counts = {"made": 0, "taken": 0, "ready_ahead": 0, "dropped_unused": 0}
        self.info: dict = {}
        self.dead = False
        self._runs: dict[str, Run] = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()
        argv = [sys.executable, "-m", "tritonlab.runs.zygote", backend]
        self.visible: list[Path] = []
        self.shared = False
        self.hidden: list[Path] = sorted({*hardening.hidden_files(), *(Path(p).resolve() for p in hidden)})
        if hardened:
            argv = [
                *hardening.zygote_argv(backend, read_only, tuple(self.hidden)),
                "--isolate",
                str(hardening.runs_folder()),
            ]
            self.visible = hardening.visible_roots(read_only)
            self.shared = runfolder.share(hardening.runs_folder())  # later run mounts reach the sandbox
        if self.pool and not hardened:
            argv += ["--pool", str(self.pool)]
        env = child_environment(backend)
        if hardened:
            env["TMPDIR"] = hardening.ZYGOTE_TMP
        self.proc = SPAWNER.popen(  # from a thread that outlives the caller's (_Spawner)
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=tempfile.gettempdir(),
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if msg.get("ready"):
                self.info = msg
                self._ready.set()
                self._refill()
                continue
            with self._lock:
                run = self._runs.get(msg.get("id", ""))
            if run is None:
                continue
            if "pid" in msg:
                run.pid = msg["pid"]
                if run.limits_hold:
                    self._place(run)
            else:
                with self._lock:
                    self._runs.pop(run.id, None)
                run._finish(msg)
        self.dead = True
        self._ready.set()

    @property
    def run_cgroups(self) -> bool:
        """Does this worker put each run in its own cgroup (see __init__)?"""
        if self._cgroups_wanted is None:
            if self._cgroups_probe is not None:
                self._cgroups_probe.join()
            self.cgroup_controllers = proof.proven(self.hardened)  # memory alone is worth holding runs for
            self._cgroups_wanted = bool(self.cgroup_controllers)
        return self._cgroups_wanted

    @run_cgroups.setter
    def run_cgroups(self, value: bool) -> None:
        self._cgroups_wanted = value

    def _place(self, run: Run) -> None:
        """Put a held child into its run's cgroup, then release it; a child that cannot be placed dies."""
        try:
            # Found at once through NSpid; by name (gVisor) only once the held child has named itself, which
            # can come just after the zygote reported its pid: look again for a moment before giving up.
            deadline = time.monotonic() + 3.0
            while (host := self.host_pid(run)) is None:
                if run.closed or time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            if host is None:
                raise hierarchy.CgroupError(3, f"no process with pid {run.pid} below the worker")
            with run.group_lock:
                if run.closed:  # the run already ended (Stop, timeout, a dead worker): nothing to place
                    raise hierarchy.CgroupError(3, "the run ended before it was placed")
                group = rungroup.RunGroup(
                    run.limits.memory_bytes,
                    run.limits.pids or default_run_pids(),
                    controllers=self.cgroup_controllers,  # None (forced on): every controller made
                )
                run.group = group
            group.place(host)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the held child must die, never hang
            run.sandbox_error = f"the run could not be placed in its own cgroup: {exc}"
            self.send({"op": "kill", "id": run.id})
            return
        self.send({"op": "go", "id": run.id})

    def host_pid(self, run: Run) -> int | None:
        """The pid here of `run`'s top process (None before the worker said its pid, or once it is gone)."""
        if not run.pid or self.dead:
            return None
        return rungroup.host_pid(int(run.pid), self.proc.pid, jail.hold_tag(run.id), self.pid_level())

    def pid_level(self) -> int:
        """Which field of a process's `NSpid` line is its pid in the zygote's namespace (the pid the zygote
        reports): the worker's own depth, one deeper inside bubblewrap (`--unshare-pid`). Runs live one or more
        namespaces further down (runs/pidns.py), so a run's own last field says nothing about the zygote's."""
        depth = len(rungroup.nspid(self.proc.pid)) or 1
        return depth if self.hardened else depth - 1

    def wait_ready(self, timeout: float = 120.0) -> dict:
        if not self._ready.wait(timeout) or self.dead:
            err = b""
            if self.proc.stderr is not None and self.proc.poll() is not None:
                err = self.proc.stderr.read() or b""
            tail = err.decode("utf-8", "replace").strip().splitlines()[-5:]
            raise SandboxError(
                f"the {self.backend} worker did not start: "
                + (" | ".join(tail) or "no message")
                + " — run `tritonlab doctor` to check torch and triton"
            )
        return self.info

    def send(self, msg: dict) -> None:
        if self.proc.stdin is None or self.dead:
            return
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            self.dead = True

    def cache_folder(self, name: str) -> Path:
        """The compile cache folder `name` for this worker's runs (runs/caches.py), emptied first when nearly
        full and no run is running with it. A warm child bound to it ahead (hardened with a pool) does not
        count: it has compiled nothing yet, and one is always bound to a learner's cache while the pool keeps
        their next run warm, so counting it kept a full cache full for good (every later run of that learner
        failed with ENOSPC: dev check on the H200 run 2026-12-04 (bda3280))."""
        path = caches.folder(name, self.hardened)
        with self._lock:
            self._cache_paths.add(path)
            idle = not self._cache_use.get(name)
        if idle and caches.nearly_full(path):
            caches.empty(path)
        return path

    def cache_released(self, name: str) -> None:
        with self._lock:
            self._cache_use[name] = max(0, self._cache_use.get(name, 0) - 1)

    def new_run_dir(self, cache: str | None = caches.LEARNER) -> tuple[Path, bool]:
        """A run directory for this zygote's next run, whose run will use compile cache `cache`
        (runs/caches.py: `learner`, `learner-KEY`, or `replay` for a mode that imports no learner file), and
        whether a warm child is bound to it already (hardened with a pool); otherwise a fresh one, like the
        module function runfolder.new_run_dir(). `cache=None`: no shared cache, the run compiles into its own directory."""
        if cache is None:
            return runfolder.new_run_dir(), bool(self.pool) and not self.hardened
        caches.check_name(cache)
        self.wait_ready()
        with self._lock:
            for gone in [p for p in self._cache_of if not p.exists()]:
                del self._cache_of[gone]  # handed out and removed without a run (the caller's error path)
        found = self._take_warm(cache)  # taken before the plan changes, so a refill cannot drop it
        with self._lock:
            self._expected.pop(cache, None)
            if cache in self._recent:
                self._recent.remove(cache)
            self._recent.insert(0, cache)
            del self._recent[max(self.pool, 2) + 4 :]
        if found is None and self.hardened and self.pool and not self.dead:
            found = self._warm_for(
                cache
            )  # a cache not kept warm: its child starts now, bound ahead all the same
        self._refill()  # the next run's child warms up (and a directory given up without a run frees its place)
        if found is None:  # layer 1 with a pool: any run takes a warm child
            path = runfolder.new_run_dir()
            with self._lock:
                self._cache_of[path] = cache
            return path, bool(self.pool) and not self.hardened
        return found[0], True

    def start(self, run_dir: Path, limits: Limits) -> Run:
        """Start the job written in `run_dir`. A directory from new_run_dir() runs with the compile cache
        named there; any other with a cache of its own inside the directory (hardened) or the learner's."""
        self.wait_ready()
        with self._lock:
            handed = run_dir in self._handed
            self._handed.discard(run_dir)
            cache_name = self._cache_of.pop(run_dir, None)
        cache = str(self.cache_folder(cache_name)) if cache_name else ""
        renamed = {}
        if self.hardened:
            hardening.prepare_run_dir(run_dir)
            renamed = rundir.expose_learner_file(
                run_dir, self.visible, hardening.prepare_run_dir, self.hidden
            )
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        log_fd = os.open(run_dir / "output.log", flags, 0o600)
        if self.hardened:
            hardening.prepare_run_dir(run_dir / "output.log")
        run = Run(self, uuid.uuid4().hex, run_dir, limits, log_fd, renamed)
        run.limits_hold = self.run_cgroups
        run.find_host_pid = lambda: self.host_pid(run)
        with self._lock:
            self._runs[run.id] = run
        child = limits.for_child()
        if self.run_cgroups:
            child["hold"] = True  # the child waits until _place() put it in the run's cgroup
        if not self.hardened:  # layer 1: the child refuses to open reference solutions (see jail.deny_files)
            child["deny"] = [str(p) for p in self.hidden if str(p) != _job_file(run_dir)]
        if cache:
            child["cache"] = cache
            child["trusted"] = run.trusted = caches.kind(cache_name) == caches.REPLAY
            run.cache_name = cache_name
            with self._lock:
                self._cache_use[cache_name] = self._cache_use.get(cache_name, 0) + 1
        self.send({"op": "run", "id": run.id, "run_dir": str(run_dir), "limits": child})
        if handed:
            self._refill()  # the next run's child warms up while this one runs
        return run

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                if self.proc.stdin:
                    self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
        self.dead = True
        with self._lock:
            left, self._warm_dirs = self._warm_dirs, []
        for path, _name in left:
            runfolder.remove_run_dir(path)
        if self.hardened:  # a capped cache is a tmpfs: its memory goes with the worker (runs keep their bind)
            for path in self._cache_paths:
                runfolder.release(path)
        if self.run_cgroups:
            hierarchy.release()
        if self.shared:
            self.shared = False
            runfolder.unshare(config.runs_dir().resolve())
