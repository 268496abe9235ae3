"""The line on a GPU run's memory by the driver's own count (issue 37: one learner must not take the GPU from
the runs beside it).

Each GPU run's torch allocations are capped (`pool.soft_gpu_cap`), but that cap is soft: memory taken past torch's
allocator (the CUDA driver through ctypes, a second process with a context of its own) is not counted, and one
run could hold the whole GPU for its wall limit while its neighbours' allocations fail. The driver counts every
process's memory; NVML reports it (`nvmlDeviceGetComputeRunningProcesses`). `Watch`, one per parent process,
reads that count while GPU runs are in flight (every 0.5 s: `config.gpu_memory_line`), sums it over each run's process tree and ends a
run whose tree holds more than its line: the soft cap plus `LINE_EXTRA` for the context, Triton's modules and
the libraries' workspaces. The run's verdict says why (`RunResult.limits_hit` holds "GPU memory").

NVML is read through ctypes (`libnvidia-ml.so.1`, shipped with the driver): no Python package is needed. Where
it is missing (no GPU, a driver without it) or its process ids name no process of this machine's /proc (a
PID namespace the driver does not translate into), the line cannot be held; `probe()` (doctor) says which, and
the cap stays what it was, soft.
"""

from __future__ import annotations

import collections
import ctypes
import threading
import time
from collections.abc import Callable

from tritonlab import config

# above the soft cap: the CUDA context, Triton's modules, cuBLAS's and cuDNN's workspaces
LINE_EXTRA = 2 << 30
_NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF  # NVML's "no figure" for a process's memory
_INSUFFICIENT_SIZE = 7
_MAX_PROCESSES = 4096


class _ProcessInfo(ctypes.Structure):
    """nvmlProcessInfo_t (NVML's second layout, the one `_v3` fills)."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("used", ctypes.c_ulonglong),
        ("gpu_instance", ctypes.c_uint),
        ("compute_instance", ctypes.c_uint),
    ]


class Nvml:
    """The few NVML calls the watch makes. Raises OSError where the library or a device cannot be opened."""

    def __init__(self, library: str = "libnvidia-ml.so.1") -> None:
        self.lib = ctypes.CDLL(library)
        if self.lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit failed")
        count = ctypes.c_uint()
        if self.lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            raise OSError("nvmlDeviceGetCount failed")
        self.devices = []
        for index in range(count.value):
            handle = ctypes.c_void_p()
            if self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) == 0:
                self.devices.append(handle)
        self.query = getattr(self.lib, "nvmlDeviceGetComputeRunningProcesses_v3", None)
        if self.query is None or not self.devices:
            raise OSError("this NVML lists no process memory (no devices, or no _v3 query)")

    def usage(self) -> dict[int, int]:
        """Bytes of GPU memory each process holds, summed over the devices (processes without a figure left out)."""
        found: dict[int, int] = {}
        for handle in self.devices:
            size = 64
            while True:
                infos = (_ProcessInfo * size)()
                count = ctypes.c_uint(size)
                code = self.query(handle, ctypes.byref(count), infos)
                if code == _INSUFFICIENT_SIZE and size < _MAX_PROCESSES:
                    size = min(_MAX_PROCESSES, max(size * 2, count.value + 16))
                    continue
                break
            if code != 0:
                continue
            for info in infos[: min(count.value, size)]:
                if info.used != _NOT_AVAILABLE:
                    found[info.pid] = found.get(info.pid, 0) + int(info.used)
        return found


def _parent(pid: int) -> int:
    """The parent of `pid` as /proc shows it here (0: no such process, or its parent is not visible)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


class Parents(dict):
    """pid -> parent pid, each read from /proc when first asked: a reading walks only the chains of the processes
    the driver names, not every process of the machine."""

    def get(self, pid: int, default: int = 0) -> int:  # type: ignore[override]
        if pid not in self:
            self[pid] = _parent(pid)
        return super().get(pid) or default


def tree_usage(root: int, usage: dict[int, int], parents: dict[int, int]) -> int:
    """Bytes held by `root` and every process below it (by the parent links `parents`: pid -> parent pid)."""
    total = 0
    for pid, used in usage.items():
        seen = 0
        while pid and seen < 64:  # a process's chain of parents, up to `root` or the top
            if pid == root:
                total += used
                break
            pid = parents.get(pid, 0)
            seen += 1
    return total


class _Watched:
    __slots__ = ("root", "find_root", "line", "on_over", "used")

    def __init__(
        self, find_root: Callable[[], int | None], line: int, on_over: Callable[[int], None]
    ) -> None:
        self.root: int | None = None
        self.find_root, self.line, self.on_over = find_root, line, on_over
        self.used = 0


class Watch:
    """Reads the driver's count while runs are watched and ends a run past its line. `usage` is where the count
    comes from (an `Nvml`'s `usage`); the thread runs only while something is watched."""

    def __init__(self, usage: Callable[[], dict[int, int]], poll_s: float = config.GPU_MEMORY_POLL_S) -> None:
        self.usage, self.poll_s = usage, poll_s
        self._lock = threading.Lock()
        self._watched: dict[int, _Watched] = {}
        self._next = 0
        self._thread: threading.Thread | None = None
        # when it ended a run (time.monotonic()), the latest 256
        self.ended: collections.deque[float] = collections.deque(maxlen=256)

    def add(self, find_root: Callable[[], int | None], line: int, on_over: Callable[[int], None]) -> int:
        """Watch a run: `find_root` gives its top process's pid here (None until known), `on_over(bytes)` is
        called once when its tree holds more than `line` bytes. Returns the key for `remove`."""
        with self._lock:
            self._next += 1
            self._watched[self._next] = _Watched(find_root, line, on_over)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="gpu-memory-watch", daemon=True)
                self._thread.start()
            return self._next

    def remove(self, key: int) -> int:
        """Stop watching; returns the most bytes its tree was seen holding."""
        with self._lock:
            watched = self._watched.pop(key, None)
        return watched.used if watched else 0

    def ended_between(self, start: float, end: float) -> int:
        """How many runs it ended between two `time.monotonic()` readings."""
        return sum(1 for at in list(self.ended) if start <= at <= end)

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self._watched:
                    self._thread = None
                    return
            self.poll()
            time.sleep(self.poll_s)

    def poll(self) -> None:
        """One reading: every watched run's tree summed, and those past their line ended."""
        try:
            usage = self.usage()
        except Exception:  # noqa: BLE001 - a reading that failed holds nothing; the next may work
            return
        with self._lock:
            watched = list(self._watched.values())
        if not usage or not watched:
            return
        parents = Parents()
        for run in watched:
            if run.root is None:
                run.root = run.find_root()
                if run.root is None:
                    continue
            used = tree_usage(run.root, usage, parents)
            if used > run.used:
                run.used = used
            if used > run.line and run.on_over is not None:
                over, run.on_over = run.on_over, None  # once
                self.ended.append(time.monotonic())
                over(used)


_watch: Watch | None = None
_reason = ""
_made = threading.Lock()


def watch() -> Watch | None:
    """This process's watch over the driver's count, made on first use; None where NVML cannot be read here or
    TRITONLAB_GPU_MEMORY_LINE is off."""
    global _watch, _reason
    with _made:
        poll_s = config.gpu_memory_line()
        if _watch is None and poll_s is None:
            return None
        if _watch is None and not _reason:
            try:
                _watch = Watch(Nvml().usage, poll_s or config.GPU_MEMORY_POLL_S)
            except (OSError, AttributeError) as exc:
                _reason = f"NVML cannot be read here ({exc})"[:200]
        return _watch


def install(current: Watch | None) -> Watch | None:
    """Make `current` this process's watch (a count read from elsewhere than NVML: the tests on a machine
    without a GPU); returns the one it replaces. None puts back the NVML watch, made again on next use."""
    global _watch, _reason
    with _made:
        previous, _watch, _reason = _watch, current, ""
    return previous


def line(cap: int) -> int:
    """The bytes a GPU run's whole process tree may hold by the driver's count, for a soft cap of `cap`."""
    return cap + LINE_EXTRA


_PROBE = """
import ctypes, sys
cuda = ctypes.CDLL("libcuda.so.1")
device, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
ok = cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
ok = ok and cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device) == 0 and cuda.cuCtxSetCurrent(ctx) == 0
ok = ok and cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(256 << 20)) == 0
print("ready" if ok else "no-cuda", flush=True)
sys.stdin.readline()
"""


def probe(timeout: float = 10.0) -> dict:
    """Is the line held here? Proved on a real child: it makes a CUDA context and takes 256 MiB from the driver,
    and the driver's count (NVML) must name its pid, as this process sees it, with at least that much.
    Returns {"held": bool, "reason": str, "line_extra_bytes": int}."""
    import subprocess
    import sys

    found = {"held": False, "reason": "", "line_extra_bytes": LINE_EXTRA}
    current = watch()
    if current is None:
        return found | {"reason": _reason or "TRITONLAB_GPU_MEMORY_LINE is off"}
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", _PROBE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
    except OSError as exc:
        return found | {"reason": f"the probe could not start: {exc}"}
    try:
        ready = child.stdout.readline().strip() if child.stdout else ""  # bounded by the child's own end
        if ready != "ready":
            return found | {"reason": "the probe's child could not take GPU memory from the driver"}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if current.usage().get(child.pid, 0) >= 256 << 20:
                return found | {"held": True}
            time.sleep(0.1)
        return found | {"reason": "the driver's count (NVML) does not name this machine's process ids here"}
    finally:
        child.kill()
        child.wait()
