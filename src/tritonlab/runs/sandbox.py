"""PARENT side of a run: start the warm zygote, hand it jobs, enforce time and output limits, collect.

Learner code never runs in the CLI or server process: an out-of-bounds store on the interpreter corrupts
the heap of the process that ran it, and on a GPU it poisons the CUDA context. Each run is a fresh child
forked from a zygote that already imported torch and triton (sandbox layer 1):

- a new session and process group; the whole tree (setsid'd grandchildren too) killed on timeout or Stop
- wall-clock timeout (here) and CPU-time limit (soft < hard, in the child)
- address-space limit on the interpreter (never on a GPU: CUDA reserves a large address space at start)
- output cap (here, on the live log) and a file-size limit (in the child)
- a private temporary working directory, removed afterwards
- an environment built from an allowlist: no tokens or secrets reach learner code
- the parent never follows what a run planted: it reads the log through its own descriptor, and removes
  symlinks, FIFOs and hard links from the run directory before anything there is read

Per-run resource units (cgroups.py, runfolder.py; root or a delegated subtree): each run held until the
parent placed it in its own cgroup (one memory and pids limit for all its processes), and each run directory
its own capped tmpfs; the parent stops a run that hit either and says which in `RunResult.limits_hit`.

Layer 2 (hardening.py, `Zygote(..., hardened=True)`): the zygote itself runs inside bubblewrap as an
unprivileged user, so every run inherits it; each run sees and writes only its own directory.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tritonlab import config
from tritonlab.runs import caches, cgroups, hardening, jail, rundir, runfolder

ENV_ALLOW = {
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TZ",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "NVIDIA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OPENBLAS_NUM_THREADS",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
}
ENV_ALLOW_PREFIXES = ("TRITON_",)
ENV_DENY_MARKERS = ("TOKEN", "SECRET", "PASSWORD", "KEY")

DEFAULT_OUTPUT_CAP = 1 << 20  # bytes of learner output kept and shown
INTERPRETER_MEMORY = 2 << 30  # address space a run may add on top of the zygote's own
RUN_MEMORY = {"interpreter": 3 << 30, "gpu": 16 << 30}  # memory of all a run's processes (per-run cgroup)
GPU_MEMORY = 16 << 30  # soft GPU memory cap of a run: torch's allocator (pool.soft_gpu_cap)


RUN_USER_NAME = "learner"


def gpu_memory_cap() -> int:
    """Bytes of GPU memory a run's torch allocations may hold: TRITONLAB_GPU_MEMORY_GIB, else 16 GiB."""
    value = os.environ.get("TRITONLAB_GPU_MEMORY_GIB", "").strip()
    try:
        return max(1 << 28, int(float(value) * (1 << 30))) if value else GPU_MEMORY
    except ValueError:
        return GPU_MEMORY


def default_run_pids() -> int:
    """pids.max of a run: processes AND threads (torch starts a thread per core)."""
    return max(512, 8 * (os.cpu_count() or 1))


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the learner's code): says what to do."""


def child_environment(backend: str) -> dict[str, str]:
    env = {}
    for key, value in os.environ.items():
        allowed = key in ENV_ALLOW or key.startswith(ENV_ALLOW_PREFIXES)
        if allowed and not any(marker in key for marker in ENV_DENY_MARKERS):
            env[key] = value
    env.pop("TRITON_INTERPRET", None)
    home = config.home() / "sandbox-home"
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            "TRITON_CACHE_DIR": str(config.triton_cache_dir("learner")),
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "MPLBACKEND": "Agg",
            "TMPDIR": tempfile.gettempdir(),
            # A hardened run is a user with no passwd entry: getpass.getuser() (torch.compile's cache folder
            # name, found on the H200) reads these before it asks the passwd database, which would raise.
            "USER": RUN_USER_NAME,
            "LOGNAME": RUN_USER_NAME,
        }
    )
    src = str(Path(__file__).resolve().parents[2])  # make tritonlab importable from a source checkout
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if backend == "interpreter":
        env["TRITON_INTERPRET"] = "1"
    elif "TRITON_LIBCUDA_PATH" not in env and (cuda_dir := hardening.libcuda_dir()):
        # Triton finds libcuda with `ldconfig -p`, which fails inside bubblewrap (no ld.so.cache there):
        # the parent looks it up once and tells the run where it is.
        env["TRITON_LIBCUDA_PATH"] = cuda_dir
    return env


@dataclass
class Limits:
    wall_seconds: float = 60.0
    cpu_seconds: int = 120
    output_bytes: int = DEFAULT_OUTPUT_CAP
    file_bytes: int = 512 << 20
    address_space_bytes: int | None = INTERPRETER_MEMORY
    processes: int | None = None  # RLIMIT_NPROC of a hardened run (default: jail.default_processes())
    memory_bytes: int | None = RUN_MEMORY["interpreter"]  # per-run cgroup: all the run's processes together
    pids: int | None = None  # per-run cgroup pids.max (default: default_run_pids())
    gpu_memory_bytes: int | None = None  # soft cap in torch's CUDA allocator (GPU runs; pool.soft_gpu_cap)

    def for_child(self) -> dict:
        return {
            "cpu_seconds": self.cpu_seconds,
            "file_bytes": self.file_bytes,
            "address_space_bytes": self.address_space_bytes,
            "processes": self.processes,
            "gpu_memory_bytes": self.gpu_memory_bytes,
        }


@dataclass
class RunResult:
    run_dir: Path
    exit_code: int | None
    signal: int | None
    timed_out: bool
    stopped: bool
    output_truncated: bool
    output: str
    seconds: float
    files: dict[str, bytes] = field(default_factory=dict)
    limits_hit: list[str] = field(default_factory=list)  # per-run cgroup limits that stopped something
    sandbox_error: str = ""  # the run could not be contained as asked (then it never ran learner code)
    folder_full: str = ""  # why the run's directory was full (its capped tmpfs, or too many files)
    cgroup: str = ""  # the name of the run's own cgroup ("" when it had none), and its controllers
    cgroup_controllers: tuple[str, ...] = ()
    timings: dict = field(default_factory=dict)  # a remote run: where its time went (ray_executor.RemoteRun)

    @property
    def crashed(self) -> bool:
        return self.signal is not None and not self.timed_out and not self.stopped


class Run:
    """One job in flight. `wait()` streams its output; `stop()` kills its whole process tree."""

    def __init__(
        self,
        zygote: Zygote,
        job_id: str,
        run_dir: Path,
        limits: Limits,
        log_fd: int,
        renamed: dict[str, str] | None = None,
    ) -> None:
        self.zygote, self.id, self.run_dir, self.limits = zygote, job_id, run_dir, limits
        self.log_fd, self.renamed = log_fd, renamed or {}
        self.pid: int | None = None
        self.group: cgroups.RunGroup | None = None
        self.group_lock = threading.Lock()  # wait()'s clean-up against a late placement (_place)
        self.closed = False
        self.limits_hold = False
        self.cache_name: str | None = None  # the compile cache it runs with (runs/caches.py), when named
        self.sandbox_error = ""
        self.status: dict | None = None
        self.started = time.monotonic()
        self._done = threading.Event()
        self._stop = threading.Event()

    def _finish(self, status: dict) -> None:
        self.status = status
        if self.cache_name:
            self.zygote.cache_released(self.cache_name)
        self._done.set()

    def stop(self) -> None:
        self._stop.set()
        self.zygote.send({"op": "kill", "id": self.id})

    def wait(self, on_output: Callable[[str], None] | None = None) -> RunResult:
        try:
            return self._wait(on_output)
        finally:
            os.close(self.log_fd)
            with self.group_lock:
                self.closed = True  # a placement that comes later must not create a cgroup nobody removes
                if self.group is not None:  # whatever the run left in its cgroup dies with it
                    self.group.remove()
            rundir.sanitize(self.run_dir)
            rundir.restore_names(self.run_dir, self.renamed)

    def _wait(self, on_output: Callable[[str], None] | None) -> RunResult:
        position, pieces, size, truncated, timed_out = 0, [], 0, False, False
        deadline = self.started + self.limits.wall_seconds

        def drain() -> None:
            nonlocal position, size, truncated
            if truncated:
                return
            room = self.limits.output_bytes - size
            # Our own descriptor of the log the zygote created: a run that replaces output.log with a
            # symlink or a FIFO changes nothing here, and a flood is read at most `room + 1` bytes at a time.
            data = os.pread(self.log_fd, room + 1, position)
            position += len(data)
            if not data:
                return
            for copy, original in self.renamed.items():
                data = data.replace(copy.encode(), original.encode())
            if len(data) > room:
                data, truncated = data[:room], True
                self.stop()
            size += len(data)
            text = data.decode("utf-8", errors="replace")
            pieces.append(text)
            if on_output:
                on_output(text)

        hit: list[str] = []
        full, checked = "", time.monotonic()
        while not self._done.wait(0.03):
            drain()
            if self.group is not None and not hit and self.group.oom_kills():
                hit.append("memory")  # v1 has no memory.oom.group: one OOM kill ends the whole run
                self.stop()
            if not full and time.monotonic() - checked > 0.5 and os.path.ismount(self.run_dir):
                checked = time.monotonic()
                if full := runfolder.over_cap(self.run_dir):  # its own tmpfs is full: end the run now
                    self.stop()
            if time.monotonic() > deadline and not timed_out:
                timed_out = True
                self.stop()
            if self.zygote.dead and not self._done.is_set():
                self._finish({"signal": 9, "zygote_died": True})
        drain()
        status = self.status or {}
        if self.group is not None:
            hit = self.group.limits_hit()
        full = full or runfolder.over_cap(self.run_dir)
        if full:
            hit.append("run folder")
        return RunResult(
            run_dir=self.run_dir,
            exit_code=status.get("exit"),
            signal=status.get("signal"),
            timed_out=timed_out,
            stopped=self._stop.is_set() and not timed_out and not truncated,
            output_truncated=truncated,
            output="".join(pieces),
            seconds=time.monotonic() - self.started,
            limits_hit=hit,
            sandbox_error=self.sandbox_error,
            folder_full=full,
            cgroup=self.group.name if self.group is not None else "",
            cgroup_controllers=tuple(
                c for *_, made in (self.group.folders if self.group else []) for c in made
            ),
        )


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


def warm_plan(recent: list[str], size: int) -> collections.Counter:
    """How many warm children each compile cache gets out of `size` (hardened), from the names asked for most
    recently first: half for the replay's (every check's second run), the rest for the learners' in turn, so
    one learner checking several files at once (dev check) gets several of each and a class one for each recent
    learner; a single child (a forced TRITONLAB_POOL=1) goes to the cache asked for last."""
    learners = [n for n in recent if n != caches.REPLAY] or [caches.LEARNER]
    plan: collections.Counter = collections.Counter()
    if size == 1:  # one child (TRITONLAB_POOL=1 only): for the cache asked for last
        plan[recent[0] if recent else caches.LEARNER] = 1
        return plan
    if size >= 2:
        plan[caches.REPLAY] = size // 2
    for i in range(size - plan[caches.REPLAY]):
        plan[learners[i % len(learners)]] += 1
    return plan


class Zygote:
    """A warm `python -m tritonlab.runs.zygote BACKEND` process; thread-safe."""

    def __init__(
        self,
        backend: str,
        hardened: bool = False,
        read_only: tuple[Path, ...] = (),
        hidden: tuple[Path, ...] = (),
        run_cgroups: bool | None = None,
        pool: int = 0,
    ) -> None:
        """`run_cgroups=True` puts each run in its own cgroup (cgroups.py) before it runs anything (None:
        when this machine allows it, see cgroups.available);
        `hardened=True` starts it inside bubblewrap (hardening.py; raises hardening.Unavailable if it
        cannot); `read_only` adds folders (the learner's workspace) that runs may read in place; `hidden`
        adds files (reference solutions) that runs may never read, besides the course's own; `pool` keeps
        that many warm single-use children (runs/pool.py). Hardened, those children are bound to run
        directories the zygote makes ahead (`new_run_dir`): only runs in such directories start warm."""
        self.backend = backend
        self.hardened = hardened
        # Per-run cgroups only where a probe saw them stop something (cgroups.probe, cached per process): a
        # machine where the folders are writable but placement or the limits do not work (seen on a GPU host
        # under gVisor) must not hold every run waiting for a placement that never comes. The probe runs
        # beside the worker's start-up (torch and triton take longer to import), so it costs no latency.
        self._cgroups_wanted = run_cgroups
        self.cgroup_controllers: tuple[str, ...] | None = None  # the proven ones a run's cgroup uses
        self._cgroups_probe: threading.Thread | None = None
        if run_cgroups is None:
            self._cgroups_probe = threading.Thread(
                target=cgroups.proven, args=(hardened,), name="cgroup-probe", daemon=True
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
            self.cgroup_controllers = cgroups.proven(self.hardened)  # memory alone is worth holding runs for
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
            while (host := cgroups.host_pid(int(run.pid or 0), self.proc.pid, jail.hold_tag(run.id))) is None:
                if run.closed or time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            if host is None:
                raise cgroups.CgroupError(3, f"no process with pid {run.pid} below the worker")
            with run.group_lock:
                if run.closed:  # the run already ended (Stop, timeout, a dead worker): nothing to place
                    raise cgroups.CgroupError(3, "the run ended before it was placed")
                group = cgroups.RunGroup(
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
        full and no run uses it."""
        path = caches.folder(name, self.hardened)
        with self._lock:
            self._cache_paths.add(path)
            idle = not self._cache_use.get(name) and not any(c == name for _, c in self._warm_dirs)
        if idle and caches.nearly_full(path):
            caches.empty(path)
        return path

    def _take_warm(self, cache: str) -> tuple[Path, str] | None:
        with self._lock:
            found = next(((p, c) for p, c in self._warm_dirs if c == cache), None)
            if found is not None:
                self._warm_dirs.remove(found)
                self._handed.add(found[0])
                self._cache_of[found[0]] = cache
            return found

    def cache_released(self, name: str) -> None:
        with self._lock:
            self._cache_use[name] = max(0, self._cache_use.get(name, 0) - 1)

    def _refill(self) -> None:
        """Hardened with a pool: make run directories ahead, each with a child warming up in it, bound to the
        compile cache warm_plan() gives it; warm children of caches the plan no longer wants make way."""
        if not (self.hardened and self.pool):
            return
        with self._refilling:  # the reader thread (worker ready) and callers: one plan at a time
            self._refill_now()

    def _refill_now(self) -> None:
        with self._lock:
            for gone in [d for d in self._handed if not d.exists()]:
                self._handed.discard(gone)  # given up without a run: its warm child must not wait forever
                self._cache_of.pop(gone, None)
                self.send({"op": "drop", "run_dir": str(gone)})
            wanted = warm_plan(self._recent, self.pool)
            for path, name in list(self._warm_dirs):
                if wanted[name] > 0:
                    wanted[name] -= 1
                    continue
                self._warm_dirs.remove((path, name))  # a cache nobody asked for lately: its child makes way
                self.send({"op": "drop", "run_dir": str(path)})
                remove_run_dir(path)
            missing = [name for name, count in wanted.items() for _ in range(count)]
        for name in missing:
            if self.dead:
                return
            cache = self.cache_folder(name)
            path = new_run_dir()
            hardening.prepare_run_dir(path)
            with self._lock:
                self._warm_dirs.append((path, name))
            self.send({"op": "warm", "run_dir": str(path), "cache": str(cache)})

    def new_run_dir(self, cache: str | None = caches.LEARNER) -> tuple[Path, bool]:
        """A run directory for this zygote's next run, whose run will use compile cache `cache`
        (runs/caches.py: `learner`, `learner-KEY`, or `replay` for a mode that imports no learner file), and
        whether a warm child is bound to it already (hardened with a pool); otherwise a fresh one, like the
        module's new_run_dir(). `cache=None`: no shared cache, the run compiles into its own directory."""
        if cache is None:
            return new_run_dir(), bool(self.pool) and not self.hardened
        caches.check_name(cache)
        self.wait_ready()
        with self._lock:
            for gone in [p for p in self._cache_of if not p.exists()]:
                del self._cache_of[gone]  # handed out and removed without a run (the caller's error path)
        found = self._take_warm(cache)  # taken before the plan changes, so a refill cannot drop it
        with self._lock:
            if cache in self._recent:
                self._recent.remove(cache)
            self._recent.insert(0, cache)
            del self._recent[max(self.pool, 2) + 4 :]
        if found is None and self.hardened and self.pool:
            self._refill()  # a cache not kept warm until now: its child starts here, bound ahead all the same
            found = self._take_warm(cache)
        self._refill()  # the next run's child warms up (and a directory given up without a run frees its place)
        if found is None:  # layer 1 with a pool: any run takes a warm child
            path = new_run_dir()
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
        with self._lock:
            self._runs[run.id] = run
        child = limits.for_child()
        if self.run_cgroups:
            child["hold"] = True  # the child waits until _place() put it in the run's cgroup
        if not self.hardened:  # layer 1: the child refuses to open reference solutions (see jail.deny_files)
            child["deny"] = [str(p) for p in self.hidden if str(p) != _job_file(run_dir)]
        if cache:
            child["cache"] = cache
            child["trusted"] = caches.kind(cache_name) == caches.REPLAY
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
            remove_run_dir(path)
        if self.hardened:  # a capped cache is a tmpfs: its memory goes with the worker (runs keep their bind)
            for path in self._cache_paths:
                runfolder.release(path)
        if self.run_cgroups:
            cgroups.release()
        if self.shared:
            self.shared = False
            runfolder.unshare(config.runs_dir().resolve())


def new_run_dir() -> Path:
    """A fresh run directory, named after the process that owns it (run-PID-…), so a sweep can tell whose."""
    path = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=config.runs_dir()))
    runfolder.cap(path)  # its own size- and file-capped tmpfs, when the server runs as root
    return path


STALE_UNOWNED_SECONDS = 24 * 3600


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_runs(now: float | None = None) -> list[str]:
    """Remove run directories left by a server or CLI that died (kill -9, power loss): those whose owning
    process is gone, and unowned ones (older naming) untouched for a day. Returns the names removed."""
    removed = []
    now = time.time() if now is None else now
    try:
        entries = list(os.scandir(config.runs_dir()))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith("run-") or not entry.is_dir(follow_symlinks=False):
            continue
        owner = entry.name.split("-")[1]
        if owner.isdigit():
            stale = int(owner) != os.getpid() and not _alive(int(owner))
        else:
            stale = now - entry.stat(follow_symlinks=False).st_mtime > STALE_UNOWNED_SECONDS
        if stale:
            remove_run_dir(Path(entry.path))
            removed.append(entry.name)
    return removed


def remove_run_dir(path: Path) -> None:
    """Remove a run directory without following any symlink the learner planted in it."""
    runfolder.release(path)  # a capped run folder: its tmpfs goes at once, with everything in it
    shutil.rmtree(path, ignore_errors=True)  # fd-based: unlinks symlinks, never follows them
    if path.exists() and not path.is_symlink():  # a run made folders unwritable (chmod 000): open them up
        for folder, dirs, _files in os.walk(path, followlinks=False):
            for name in dirs:
                target = os.path.join(folder, name)
                if not os.path.islink(target):
                    os.chmod(target, 0o700)
        os.chmod(path, 0o700)
        shutil.rmtree(path, ignore_errors=True)


def default_limits(backend: str, wall_seconds: float = 60.0) -> Limits:
    return Limits(
        wall_seconds=wall_seconds,
        cpu_seconds=int(wall_seconds * 2) + 5,
        address_space_bytes=INTERPRETER_MEMORY if backend == "interpreter" else None,
        memory_bytes=RUN_MEMORY.get(backend, RUN_MEMORY["interpreter"]),
        gpu_memory_bytes=gpu_memory_cap() if backend == "gpu" else None,
    )
