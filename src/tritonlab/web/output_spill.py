"""Where the output of runs in flight and recently finished is kept: a little in RAM, the rest on disk, bounded.

A job keeps its events so that a reconnecting stream resumes (Last-Event-ID) for KEEP_FINISHED_S after it ends
(web/jobs.py). Output was kept as events in RAM: a run may print 1 MiB (runs/limits.py stops it there), and a
class of learners each starting runs at the rate limit grew the server by hundreds of MiB (issue 34: +480 MiB
for 60 runs of 1 MiB). Now the first RAM_PER_JOB bytes of a job's output events stay in RAM (RAM_TOTAL for all
the jobs kept) and the rest is appended to a file of the job's own in a folder of this server process under TRITONLAB_HOME/web-output/
(never in a run's view: the hardened sandbox binds only the runs folder), read back when a stream asks.

On disk the output is bounded per owner (a learner; everyone in single-user mode) and for the server: past
DISK_PER_OWNER or DISK_TOTAL, the output of that owner's (then anyone's) oldest finished jobs is dropped first;
only if the live runs alone fill the budget is new output dropped, with a note in the stream saying so. A
job's file goes when the job is forgotten; the folder goes when the server stops, and a folder left by a
server that was killed is removed when the next one spills (its pid is no longer alive).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol


class Job(Protocol):
    """What the spill reads and marks on a job (web/jobs.py's Job)."""

    id: str
    owner: object
    ram_output: int
    spilled_bytes: int
    spill_dropped: bool
    finished_at: float


RAM_PER_JOB = 32 * 1024  # bytes of a job's output events kept in RAM; the rest is on disk
RAM_TOTAL = 32 << 20  # all jobs' output events in RAM together: past it, new output goes straight to disk
DISK_PER_OWNER = 8 << 20  # one learner's spilled output, all their kept jobs together
DISK_TOTAL = 512 << 20  # the whole server's
DROPPED_NOTE = (
    "\n[tritonlab: the rest of this output was not kept: the server's room for run output is full "
    "({what}); print less, or Stop runs you no longer follow]\n"
)


class Spilled:
    """A spilled output event: where its JSON lies in the job's file."""

    __slots__ = ("offset", "length")

    def __init__(self, offset: int, length: int) -> None:
        self.offset, self.length = offset, length


class Spill:
    """The server's spill folder and its byte accounting (per owner and in all)."""

    def __init__(
        self,
        root: Path | None = None,
        per_owner: int = DISK_PER_OWNER,
        total: int = DISK_TOTAL,
    ) -> None:
        self._parent = root
        self.per_owner, self.total = per_owner, total
        self.folder: Path | None = None
        self.closed = False
        self.used: dict[object, int] = {}  # owner -> bytes on disk
        self.ram_used = 0  # bytes of output events held in RAM by the jobs kept
        self.lock = threading.Lock()
        # The finished jobs that may hold spilled output, oldest first (web/jobs.py's Jobs sets it).
        self.finished_jobs: Callable[[], list[Job]] = list

    # ---- the folder ------------------------------------------------------------------------------------------

    def _ensure_folder(self) -> Path:
        if self.folder is None:
            from tritonlab import config

            parent = self._parent or config.home() / "web-output"
            parent.mkdir(parents=True, exist_ok=True)
            sweep(parent)
            folder = parent / f"{os.getpid()}-{secrets.token_hex(4)}"
            folder.mkdir(mode=0o700)
            self.folder = folder
        return self.folder

    def path_of(self, job: Job) -> Path:
        return self._ensure_folder() / f"{job.id}.out"

    def close(self) -> None:
        """Remove this server's folder (the server is stopping)."""
        with self.lock:
            self.closed = True
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)
            self.used.clear()

    def limits(self) -> str:
        return f"{_size(self.per_owner)} a learner, {_size(self.total)} in all"

    # ---- bytes ----------------------------------------------------------------------------------------------

    def write(self, job: Job, data: bytes) -> Spilled | None:
        """Append `data` to the job's file if the budgets allow (after dropping finished jobs' output); None
        when they do not. Called with the job's lock held."""
        with self.lock:
            if self.closed or not self._room(job.owner, len(data)):
                return None
            path = self.path_of(job)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
            try:
                offset = os.fstat(fd).st_size
                os.write(fd, data)
            finally:
                os.close(fd)
            self.used[job.owner] = self.used.get(job.owner, 0) + len(data)
            job.spilled_bytes += len(data)
            return Spilled(offset, len(data))

    def _room(self, owner: object, size: int) -> bool:
        if self.used.get(owner, 0) + size > self.per_owner:
            self._free(lambda j: j.owner == owner, self.used.get(owner, 0) + size - self.per_owner)
        if sum(self.used.values()) + size > self.total:
            self._free(lambda j: True, sum(self.used.values()) + size - self.total)
        return (
            self.used.get(owner, 0) + size <= self.per_owner and sum(self.used.values()) + size <= self.total
        )

    def _free(self, which: Callable[[Job], bool], wanted: int) -> None:
        """Drop the spilled output of finished jobs (oldest first) chosen by `which` until `wanted` bytes."""
        freed = 0
        for job in self.finished_jobs():
            if freed >= wanted:
                break
            if which(job) and job.spilled_bytes:
                freed += self.drop(job)

    def take_ram(self, size: int) -> bool:
        """Whether `size` more bytes of output may stay in RAM (RAM_TOTAL for all jobs together)."""
        with self.lock:
            if self.ram_used + size > RAM_TOTAL:
                return False
            self.ram_used += size
            return True

    def forget(self, job: Job) -> None:
        """The job itself is forgotten (web/jobs.py's prune): its RAM share is free again, its file goes."""
        with self.lock:
            self.ram_used = max(0, self.ram_used - job.ram_output)
            self.drop(job)

    def drop(self, job: Job) -> int:
        """Forget a job's file (its spilled events read as empty afterwards); call with `lock` held. Returns
        the bytes freed."""
        size = job.spilled_bytes
        if not size:
            return 0
        job.spilled_bytes = 0
        job.spill_dropped = True
        self.used[job.owner] = max(0, self.used.get(job.owner, 0) - size)
        if not self.used[job.owner]:
            del self.used[job.owner]
        if self.folder is not None:
            try:
                os.unlink(self.folder / f"{job.id}.out")
            except FileNotFoundError:
                pass
        return size

    def read(self, job: Job, ref: Spilled) -> str:
        """The JSON of a spilled event; an empty output once the job's file was dropped."""
        if job.spill_dropped or self.folder is None:
            return json.dumps({"text": ""})
        try:
            fd = os.open(self.folder / f"{job.id}.out", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return json.dumps({"text": ""})
        try:
            return os.pread(fd, ref.length, ref.offset).decode("utf-8", errors="replace")
        finally:
            os.close(fd)


def sweep(parent: Path) -> None:
    """Remove the folders of servers that are gone (named `<pid>-<hex>`, the pid no longer alive)."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for entry in entries:
        pid = entry.name.split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except PermissionError:
            pass  # alive, someone else's


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"
