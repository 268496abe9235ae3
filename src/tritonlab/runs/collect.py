"""A run in flight, seen from the parent: `Run.wait()` streams its output and holds it to its limits, then
collects what happened into a `RunResult`; `Run.stop()` kills its whole process tree.

While it waits, the parent enforces what only it can: the wall clock, the output cap on the live log (read
through the parent's own descriptor: a run that swaps output.log for a symlink or a FIFO changes nothing), the
run's cgroup (one OOM kill ends the whole run), its capped folder (full: the run ends) and, on a GPU, the memory
its processes hold by the driver's count (runs/gpu_memory.py: past its line, the run ends). Afterwards the run's
cgroup is removed with whatever was left in it, and links, FIFOs and hard links the run planted in its
directory are removed before anything there is read (rundir.sanitize).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tritonlab.runs import gpu_memory, rundir, runfolder
from tritonlab.runs.cgroups.hierarchy import LONG_RUN_S
from tritonlab.runs.cgroups.rungroup import RunGroup
from tritonlab.runs.limits import Limits
from tritonlab.runs.pool import HARNESS_EXIT

# Signals nothing inside a run's own code sends by faulting (a bad store is SIGSEGV or SIGBUS, an abort SIGABRT):
# a trusted child ended by one of them was ended from outside.
EXTERNAL_SIGNALS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT})


class RunWorker(Protocol):
    """What a run needs of the worker it runs in (`sandbox.Zygote`): a way to send it messages, whether it
    died, and where to say that the run no longer uses its compile cache."""

    dead: bool

    def send(self, msg: dict) -> None: ...

    def cache_released(self, name: str) -> None: ...


# What a run can hit (RunResult.limits_hit): its cgroup's memory and pids limits (cgroups/rungroup.py), its
# capped folder, the GPU memory line (runs/gpu_memory.py).
LIMITS = ("memory", "processes", "run folder", "GPU memory")


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
    timings: dict = field(default_factory=dict)  # a remote run: where its time went (ray_executor/remote.py)
    # Why tritonlab's own harness, not the code it ran, ended this run ("" when it did not): the worker died
    # under it, or a trusted child (one that imports no learner file: the replay, the trusted compile) was
    # killed from outside. The check that ran it is retried once (grading/retry.py).
    harness_death: str = ""
    # CPU seconds of the run's process tree as its worker reaped it (the zygote's wait4; a warm child's start
    # ahead of the job included); None where its worker did not say (it died, or a remote worker's older code)
    cpu_s: float | None = None
    # the same tree's page faults and involuntary context switches (the kernel took the CPU from it), as reaped
    faults: int | None = None
    switches: int | None = None
    # GPU runs where the driver's count is read (runs/gpu_memory.py): the most bytes its process tree held
    gpu_memory_bytes: int | None = None
    gpu_memory_line: int | None = None  # the bytes past which it would be (or was) ended
    # the line ended another run of this machine while this one ran: a GPU allocation this run saw refused may
    # have been that run's doing (grading/check/pipeline.py grades such a check again)
    gpu_neighbour_ended: bool = False

    @property
    def crashed(self) -> bool:
        return self.signal is not None and not self.timed_out and not self.stopped


def cpu_seconds(value: object) -> float | None:
    """A worker's CPU figure for a run, when it is a plain finite number of seconds ≥ 0."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e7:
        return float(value)
    return None


def event_count(value: object) -> int | None:
    """A worker's count of events for a run (page faults, context switches), when it is a plain whole number ≥ 0."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 53:
        return value
    return None


class Run:
    """One job in flight. `wait()` streams its output; `stop()` kills its whole process tree."""

    def __init__(
        self,
        zygote: RunWorker,
        job_id: str,
        run_dir: Path,
        limits: Limits,
        log_fd: int,
        renamed: dict[str, str] | None = None,
    ) -> None:
        self.zygote, self.id, self.run_dir, self.limits = zygote, job_id, run_dir, limits
        self.log_fd, self.renamed = log_fd, renamed or {}
        self.pid: int | None = None
        self.group: RunGroup | None = None
        self.group_lock = threading.Lock()  # wait()'s clean-up against a late placement (_place)
        self.closed = False
        self.limits_hold = False
        self.trusted = False  # it imports no learner file (a replay or compile child): see harness_death()
        self.cache_name: str | None = None  # the compile cache it runs with (runs/caches.py), when named
        # its top process's pid in this process's namespace (None until known): set by the worker that starts
        # it, for the GPU memory line (runs/gpu_memory.py)
        self.find_host_pid: Callable[[], int | None] | None = None
        self.gpu_over = 0  # the bytes its tree held when the GPU memory line ended it (0: it did not)
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
        watched, gpu_held, line, neighbours = 0, None, 0, 0
        # None where the driver's count cannot be read here (no GPU, no NVML, the line turned off)
        watch = gpu_memory.watch() if self.find_host_pid is not None else None
        if watch is not None and self.limits.gpu_memory_bytes:
            line = gpu_memory.line(self.limits.gpu_memory_bytes)
            watched = watch.add(self.find_host_pid, line, self._gpu_over)
        try:
            demote_at = self.started + LONG_RUN_S  # a long run yields the CPU to fresh ones (RunGroup.demote)
            while not self._done.wait(0.03):
                drain()
                if demote_at and time.monotonic() > demote_at and self.group is not None:
                    demote_at = 0.0
                    self.group.demote()
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
        finally:
            if watch is not None:
                gpu_held = watch.remove(watched) if watched else None
                neighbours = watch.ended_between(self.started, time.monotonic()) - (1 if self.gpu_over else 0)
        status = self.status or {}
        if self.group is not None:
            hit = self.group.limits_hit()
        full = full or runfolder.over_cap(self.run_dir)
        if full:
            hit.append("run folder")
        if self.gpu_over:
            hit.append("GPU memory")
        return RunResult(
            run_dir=self.run_dir,
            exit_code=status.get("exit"),
            signal=status.get("signal"),
            timed_out=timed_out,
            stopped=self._stop.is_set() and not timed_out and not truncated and not self.gpu_over,
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
            harness_death=self.harness_death(status, timed_out, truncated, hit, full),
            cpu_s=cpu_seconds(status.get("cpu_s")),
            faults=event_count(status.get("faults")),
            switches=event_count(status.get("switches")),
            gpu_memory_bytes=max(gpu_held or 0, self.gpu_over) if gpu_held is not None else None,
            gpu_memory_line=line if gpu_held is not None else None,
            gpu_neighbour_ended=neighbours > 0,
        )

    def _gpu_over(self, used: int) -> None:
        """The GPU memory line's call (its watch's thread): this run's processes hold `used` bytes, past it."""
        self.gpu_over = used
        self.stop()

    def harness_death(self, status: dict, timed_out: bool, truncated: bool, hit: list[str], full: str) -> str:
        """Why the harness, not the code it ran, ended this run ("" when nothing says so): its worker died under
        it; or, for a trusted child, a kill that neither the parent (Stop, the wall clock, the output cap, a
        full folder) nor a limit of its own (memory, processes) explains, or the harness's own exit status.
        A learner's own process dying is never counted: its code may have done it."""
        if status.get("zygote_died"):
            return "the sandbox's worker process died while this run was in flight"
        if not self.trusted or timed_out or truncated or hit or full or self._stop.is_set():
            return ""
        signal_number = status.get("signal")
        if signal_number in EXTERNAL_SIGNALS:
            return f"the {self.what} child was killed from outside (signal {signal_number})"
        if signal_number is None and status.get("exit") == HARNESS_EXIT:
            return f"the {self.what} child could not be set up (exit status {HARNESS_EXIT})"
        return ""

    @property
    def what(self) -> str:
        return "replay or compile" if self.trusted else "run"
