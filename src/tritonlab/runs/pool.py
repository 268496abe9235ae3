"""Warm single-use workers: each run on a GPU starts in a child that already holds a CUDA context.

CUDA cannot survive a fork, so the zygote never initialises it and every run used to pay for its own CUDA
context (and Triton's driver set-up) after the fork, on the learner's clock. With a pool, the zygote forks
its children *ahead of time*: each warm child inherits torch and triton from the zygote, creates its CUDA
context (backend gpu only), and then blocks on a private pipe with none of the learner's code loaded. A job
handed to it runs through the very same `child_main` as a forked run (new session, limits, private cwd,
output to the run's log) in that process, which then exits: a warm child serves exactly one run. The zygote
forks the replacement at hand-off time, so the next run finds one warming up or ready.

Still true with a pool: each run is its own process (nothing of one learner's run reaches the next), Stop and
the wall clock kill the run's whole tree, and the zygote (the subreaper) reports its end as before. A warm
child that dies before it is used is replaced; after `MAX_EARLY_DEATHS` such deaths in a row the pool stops
refilling and runs are forked on demand again (a broken driver must not become a fork loop).

With the hardened layer a run isolates itself in a user namespace, which Linux refuses to a multithreaded
process (and a CUDA context starts threads), and it binds its own run directory, so a child cannot warm up
before it knows that directory. `BoundPool` solves both where the caller lets the zygote choose the directory
(`sandbox.Zygote.new_run_dir()`, used by the Ray worker): the parent makes the directory of the *next* run
ahead of time and says {"op": "warm", "run_dir"}; the child forked for it isolates itself into that
directory exactly as an on-demand run does (`jail.isolate_run`, single-threaded, before CUDA), then creates
its CUDA context, then waits for the job, which the parent writes into the directory later (the bind shows
it). The order of the walls is the same as on demand; only the job arrives after them. A run for any other
directory is forked on demand as before. `wanted(..., bound=False)` stays 0 under the hardened layer.

`TRITONLAB_POOL=N` forces N warm children on any backend (N=0 turns the pool off); by default a GPU gets one
more than the runs it may have at once (two for one run at a time: a check is a run of the learner's code,
then a replay of its launches, then a timing run, back to back, and the replacement forked at one hand-off
has had a whole run's time to create its CUDA context before the next one takes it), the interpreter none
(fork from the warm zygote is already milliseconds there). Each warm child holds a CUDA context (a few hundred
MB of GPU memory). Tests force it on the interpreter so CI exercises the single-use path.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import traceback
from collections.abc import Callable

MAX_EARLY_DEATHS = 3
MAX_POOL = 8
FLAG = "--pool"

#: The exit status of a run's process when tritonlab's own harness, not the learner's code, failed (a job for
#: another run folder, a cache it was not bound to, an exception setting the run up): the grader says so.
HARNESS_EXIT = 70


def wanted(backend: str, hardened: bool, slots: int = 1, bound: bool = False) -> int:
    """How many warm children a zygote for `backend` should keep (parent side), for `slots` runs at once: one
    more than that on a GPU (a check is runs back to back: check, replay, timing). `bound`: the caller takes
    its run directories from the zygote (`sandbox.Zygote.new_run_dir`), so a hardened zygote can warm
    children bound to them (BoundPool); otherwise a hardened zygote keeps none."""
    if hardened and not bound:
        return 0
    forced = os.environ.get("TRITONLAB_POOL", "").strip()
    if forced.isdigit():
        return min(int(forced), MAX_POOL)
    if backend != "gpu":
        return 0
    return min(max(1, slots) + 1, MAX_POOL)  # at least 2: a check's run and its replay come back to back


def size_from_argv(argv: list[str]) -> int:
    """The `--pool N` the parent put on the zygote's command line (0 when absent)."""
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == FLAG and value.isdigit():
            return int(value)
    return 0


# "spin": the driver's own choice; anything else: a run's CUDA context waits asleep (config.py)
SYNC_ENV = "TRITONLAB_CUDA_SYNC"
CU_CTX_SCHED_MASK, CU_CTX_SCHED_BLOCKING_SYNC = 0x07, 0x04


def blocking_sync() -> bool:
    """Ask the CUDA driver, before any context exists in this process, to make every device's primary context
    wait for the GPU by sleeping on the host (CU_CTX_SCHED_BLOCKING_SYNC). By default a process with one
    context on a many-core machine spins a core at each synchronize; a check child waits on the GPU often, and
    many run at once. True when the flag was set on every device."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int()
    if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return False
    setter = getattr(lib, "cuDevicePrimaryCtxSetFlags_v2", None) or lib.cuDevicePrimaryCtxSetFlags
    done = 0
    for ordinal in range(count.value):
        device = ctypes.c_int()
        if (
            lib.cuDeviceGet(ctypes.byref(device), ordinal) == 0
            and setter(device, CU_CTX_SCHED_BLOCKING_SYNC) == 0
        ):
            done += 1
    return count.value > 0 and done == count.value


def init_device(backend: str) -> None:
    """Create the CUDA context (and Triton's driver state) now, so the run does not wait for it."""
    if backend != "gpu":
        return
    try:
        if os.environ.get(SYNC_ENV, "").strip().lower() != "spin":
            blocking_sync()  # fewer core-seconds a check: H200 run 2026-12-04 (ab645a9) against (e2f45f4)
        import torch

        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        from triton.runtime import driver

        driver.active.get_current_device()
    except Exception:  # noqa: BLE001 - the run will meet the same error and report it to the learner
        traceback.print_exc()


GPU_CAP_ENV = "TRITONLAB_GPU_MEMORY_CAP"  # told to the harness, which names the cap in an out-of-memory error


def soft_gpu_cap(limit: int) -> float | None:
    """In a GPU run, before learner code: torch's CUDA caching allocator refuses to hold more than `limit`
    bytes on the current device (set_per_process_memory_fraction), so a run that allocates more gets an
    OutOfMemoryError, not the whole device. Soft: memory allocated outside torch's allocator (the CUDA
    context, a library's own cudaMalloc) is not counted; without MPS or MIG nothing stronger exists, and GPU
    settings are left untouched. Returns the fraction set (None: no CUDA device)."""
    import torch

    if not torch.cuda.is_available():
        return None
    device = torch.cuda.current_device()
    total = torch.cuda.get_device_properties(device).total_memory
    fraction = min(1.0, limit / total)
    torch.cuda.set_per_process_memory_fraction(fraction, device)
    os.environ[GPU_CAP_ENV] = str(int(min(limit, total)))
    return fraction


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _read_line(fd: int) -> bytes:
    """One job line, and not a byte more: a held job's release byte follows it on the same pipe and may be
    there already (a child still warming up when both arrive); reading past the newline would swallow it.
    b"" at EOF."""
    data = bytearray()
    while not data.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            return b""
        data += byte
    return bytes(data)


def warm_child(
    job_fd: int,
    backend: str,
    serve: Callable[[str, dict, str | None], None],
    release: Callable[[int, str], None] | None = None,
    ahead: Callable[[], None] | None = None,
) -> None:
    """In a child forked ahead of time: get the device ready, wait for one job, run it (never returns).
    A job whose limits say "hold" waits, after the job line, for the release byte on the same pipe (the
    parent places the run in its cgroup first: cgroups/); `release` reads it and exits unless released.
    `ahead` makes the namespaces a multithreaded process can no longer make (its own PID namespace:
    basicwalls.ahead), before CUDA starts its threads; this process then stays outside as the run's waiter."""
    _die_with_parent()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # the zygote's reply pipe must not stay open here (the parent waits for its EOF)
    os.close(devnull)
    if ahead is not None:
        ahead()
    init_device(backend)
    line = _read_line(job_fd)
    if not line:  # the zygote closed the pool
        os._exit(0)
    msg = json.loads(line)
    if msg.get("limits", {}).get("hold") and release is not None:
        release(job_fd, str(msg.get("id", "")))  # closes job_fd
    else:
        os.close(job_fd)
    serve(msg["run_dir"], msg.get("limits", {}), None)
    os._exit(0)


class WarmPool:
    """Zygote side: the warm children, oldest first, each with the write end of its job pipe."""

    def __init__(
        self,
        size: int,
        backend: str,
        serve: Callable[[str, dict, str | None], None],
        inherited: Callable[[], list[int]] = list,
        release: Callable[[int, str], None] | None = None,
        ahead: Callable[[], None] | None = None,
    ) -> None:
        """`inherited` lists the zygote's other descriptors a new warm child must close (release pipes of
        held runs); `release` waits for a held job's release byte in the child; `ahead` puts it in namespaces
        of its own before it warms up (warm_child)."""
        self.size, self.backend, self.serve = size, backend, serve
        self.inherited, self.release, self.ahead = inherited, release, ahead
        self.ready: list[tuple[int, int]] = []
        self.early_deaths = 0
        self.fill()

    def __contains__(self, pid: int) -> bool:
        return any(p == pid for p, _ in self.ready)

    def fill(self) -> None:
        while len(self.ready) < self.size and self.early_deaths < MAX_EARLY_DEATHS:
            self.ready.append(self._fork())

    def _fork(self) -> tuple[int, int]:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(write_end)
                for _, other in self.ready:  # the other children's pipes are none of this one's business
                    os.close(other)
                for other in self.inherited():  # nor are the release pipes of runs held right now
                    os.close(other)
                warm_child(read_end, self.backend, self.serve, self.release, self.ahead)
            except BaseException:  # noqa: BLE001 - last resort: say what broke, then exit
                traceback.print_exc()
            os._exit(HARNESS_EXIT)
        os.close(read_end)
        return pid, write_end

    def take(self, msg: dict, hold: bool = False) -> tuple[int, int | None] | None:
        """Hand a run to the oldest warm child: (its pid, the pipe to release it on when `hold`, else None),
        or None when none is left (fork one instead)."""
        line = (json.dumps(msg) + "\n").encode()
        while self.ready:
            pid, write_end = self.ready.pop(0)
            try:
                os.write(write_end, line)  # one short line: a single atomic write into an empty pipe
            except OSError:
                os.close(write_end)
                continue  # it died meanwhile; reaped() is not told, so count it here
            if not hold:
                os.close(write_end)
            self.early_deaths = 0
            self.fill()
            return pid, (write_end if hold else None)
        return None

    def reaped(self, pid: int) -> bool:
        """A child ended: if it was a warm one that never got a job, replace it and say True."""
        for i, (p, write_end) in enumerate(self.ready):
            if p == pid:
                del self.ready[i]
                os.close(write_end)
                self.early_deaths += 1
                self.fill()
                return True
        return False

    def close(self) -> None:
        for pid, write_end in self.ready:
            os.close(write_end)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.ready.clear()

    def forget(self) -> None:
        """In a child forked on demand: drop the warm children's job pipes (learner code must not feed them)."""
        for _, write_end in self.ready:
            os.close(write_end)
        self.ready.clear()


def bound_child(
    job_fd: int,
    run_dir: str,
    backend: str,
    isolate: Callable[[str, str | None], None],
    serve: Callable[[str, dict], None],
    release: Callable[[int, str], None] | None = None,
    cache: str | None = None,
) -> None:
    """In a child forked for one known run directory (hardened): isolate into it (with its compile cache
    `cache` bound, runs/caches.py), get the device ready, wait for that directory's job, run it (never
    returns). A held job waits named after its id (jail.hold_tag), as an on-demand one does, so the parent
    finds it where /proc shows no NSpid (gVisor)."""
    _die_with_parent()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # the zygote's reply pipe must not stay open here
    os.close(devnull)
    isolate(run_dir, cache)  # single-threaded still: the user namespace is made before CUDA starts any thread
    init_device(backend)
    line = _read_line(job_fd)
    if not line:  # the zygote dropped this child or closed
        os._exit(0)
    msg = json.loads(line)
    if msg.get("run_dir") != run_dir:  # never: the zygote hands a child only its own directory's job
        os._exit(HARNESS_EXIT)
    if (msg.get("limits", {}).get("cache") or None) != (cache or None):  # bound to another cache: refuse
        os._exit(HARNESS_EXIT)
    if msg.get("limits", {}).get("hold") and release is not None:
        release(job_fd, str(msg.get("id", "")))  # closes job_fd
    else:
        os.close(job_fd)
    serve(run_dir, msg.get("limits", {}))
    os._exit(0)


class BoundPool:
    """Zygote side, hardened: warm children each isolated ahead of time into the run directory the parent
    made for a coming run, by directory: {run_dir: (pid, write end of its job pipe)}."""

    def __init__(
        self,
        backend: str,
        isolate: Callable[[str, str | None], None],
        serve: Callable[[str, dict], None],
        inherited: Callable[[], list[int]] = list,
        release: Callable[[int, str], None] | None = None,
    ) -> None:
        self.backend, self.isolate, self.serve = backend, isolate, serve
        self.inherited, self.release = inherited, release
        self.children: dict[str, tuple[int, int]] = {}
        self.early_deaths = 0

    def __contains__(self, pid: int) -> bool:
        return any(p == pid for p, _ in self.children.values())

    def add(self, run_dir: str, cache: str | None = None) -> bool:
        """Fork a child for `run_dir` (bound to compile cache `cache`); False when warming is off (too many
        early deaths) or it has one."""
        if self.early_deaths >= MAX_EARLY_DEATHS or run_dir in self.children:
            return False
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(write_end)
                for _, other in self.children.values():
                    os.close(other)
                for other in self.inherited():
                    os.close(other)
                bound_child(read_end, run_dir, self.backend, self.isolate, self.serve, self.release, cache)
            except BaseException:  # noqa: BLE001 - last resort: say what broke, then exit
                traceback.print_exc()
            os._exit(HARNESS_EXIT)
        os.close(read_end)
        self.children[run_dir] = (pid, write_end)
        return True

    def take(self, msg: dict, hold: bool = False) -> tuple[int, int | None] | None:
        """The warm child of the job's directory gets the job: (pid, release pipe when `hold`), else None."""
        entry = self.children.pop(str(msg.get("run_dir")), None)
        if entry is None:
            return None
        pid, write_end = entry
        try:
            os.write(write_end, (json.dumps(msg) + "\n").encode())
        except OSError:
            os.close(write_end)
            return None  # it died meanwhile: fork on demand
        if not hold:
            os.close(write_end)
        self.early_deaths = 0
        return pid, (write_end if hold else None)

    def drop(self, run_dir: str) -> None:
        """The parent gave that directory up without a run: end its child."""
        entry = self.children.pop(run_dir, None)
        if entry is not None:
            os.close(entry[1])
            try:
                os.kill(entry[0], signal.SIGKILL)
            except ProcessLookupError:
                pass

    def reaped(self, pid: int) -> bool:
        """A warm child ended before its job: counted as an early death unless its directory is gone (given
        up by the parent before the drop arrived: the child could not isolate into it, nothing is broken)."""
        for run_dir, (p, write_end) in list(self.children.items()):
            if p == pid:
                del self.children[run_dir]
                os.close(write_end)
                if os.path.isdir(run_dir):
                    self.early_deaths += 1
                return True
        return False

    def close(self) -> None:
        for run_dir in list(self.children):
            self.drop(run_dir)

    def forget(self) -> None:
        """In another child: drop the job pipes of the warm ones."""
        for _, write_end in self.children.values():
            os.close(write_end)
        self.children.clear()
