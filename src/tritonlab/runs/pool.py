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

Not with the hardened layer: there each run isolates itself in a user namespace, which Linux refuses to a
multithreaded process (and a CUDA context starts threads), and the run's directory is known only when the
job arrives. Hardened zygotes therefore keep forking on demand (`wanted()` says 0).

`TRITONLAB_POOL=N` forces N warm children on any backend (N=0 turns the pool off); by default a GPU gets one,
the interpreter none (fork from the warm zygote is already milliseconds there). Tests force it on the
interpreter so CI exercises the single-use path.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import traceback
from collections.abc import Callable

DEFAULT_GPU = 1
MAX_EARLY_DEATHS = 3
FLAG = "--pool"


def wanted(backend: str, hardened: bool) -> int:
    """How many warm children a zygote for `backend` should keep (parent side)."""
    if hardened:
        return 0
    forced = os.environ.get("TRITONLAB_POOL", "").strip()
    if forced.isdigit():
        return min(int(forced), 8)
    return DEFAULT_GPU if backend == "gpu" else 0


def size_from_argv(argv: list[str]) -> int:
    """The `--pool N` the parent put on the zygote's command line (0 when absent)."""
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == FLAG and value.isdigit():
            return int(value)
    return 0


def init_device(backend: str) -> None:
    """Create the CUDA context (and Triton's driver state) now, so the run does not wait for it."""
    if backend != "gpu":
        return
    try:
        import torch

        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        from triton.runtime import driver

        driver.active.get_current_device()
    except Exception:  # noqa: BLE001 - the run will meet the same error and report it to the learner
        traceback.print_exc()


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _read_line(fd: int) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 65536)
        if not chunk:
            return b""
        data += chunk
    return data


def warm_child(
    job_fd: int,
    backend: str,
    serve: Callable[[str, dict, str | None], None],
    release: Callable[[int], None] | None = None,
) -> None:
    """In a child forked ahead of time: get the device ready, wait for one job, run it (never returns).
    A job whose limits say "hold" waits, after the job line, for the release byte on the same pipe (the
    parent places the run in its cgroup first: cgroups.py); `release` reads it and exits unless released."""
    _die_with_parent()
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # the zygote's reply pipe must not stay open here (the parent waits for its EOF)
    os.close(devnull)
    init_device(backend)
    line = _read_line(job_fd)
    if not line:  # the zygote closed the pool
        os._exit(0)
    msg = json.loads(line)
    if msg.get("limits", {}).get("hold") and release is not None:
        release(job_fd)  # closes job_fd
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
        release: Callable[[int], None] | None = None,
    ) -> None:
        """`inherited` lists the zygote's other descriptors a new warm child must close (release pipes of
        held runs); `release` waits for a held job's release byte in the child."""
        self.size, self.backend, self.serve = size, backend, serve
        self.inherited, self.release = inherited, release
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
                warm_child(read_end, self.backend, self.serve, self.release)
            except BaseException:  # noqa: BLE001 - last resort: say what broke, then exit
                traceback.print_exc()
            os._exit(70)
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
