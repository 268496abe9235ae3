"""One run's cgroup (`RunGroup`): made with the run's limits, the held child placed in it, read for the limits
it hit, and removed with whatever was left in it; and how the parent finds a held child's host pid.

Placement: the zygote runs inside bubblewrap as an unprivileged user and cannot write cgroup files, so the
PARENT (the server) does it. The zygote forks the child and reports its pid; the child blocks on a pipe
before doing anything else. The parent translates that pid (the zygote's PID namespace) to the host pid (the
`NSpid` line of /proc/<pid>/status of the zygote's descendants), creates the run's cgroup, writes the host
pid into `cgroup.procs` of each hierarchy, and only then tells the zygote to release the child (`go`).
A run that cannot be placed is killed before it imports learner code (sandbox.Zygote._place).

Limits per run: memory (v2 `memory.max`, `memory.swap.max=0`, `memory.oom.group=1`; v1
`memory.limit_in_bytes`, `memory.memsw.limit_in_bytes` where swap accounting exists) covering every process
of the run and the shared memory and files they touch; `pids.max` (processes and threads); a CPU weight
below the server's (v2 `cpu.weight`, v1 `cpu.shares`), a tenth of it once the run is long (`demote`). After the run every remaining process is killed
(v2 `cgroup.kill`, else SIGKILL to each pid in `cgroup.procs`) and the directories are removed.

Runs are held for placement only where the placement itself works (`placement_works`): a held child's host
pid is found through the `NSpid` line of /proc/PID/status or, on a kernel without it (some gVisor versions),
by the name the child gave itself while held (`jail.hold_tag`, checked on a real child: `names_visible`).
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from tritonlab.runs.cgroups import hierarchy, sweep
from tritonlab.runs.cgroups.hierarchy import (
    V1_CPU_SHARES,
    V1_CPU_SHARES_LONG,
    V2_CPU_WEIGHT,
    V2_CPU_WEIGHT_LONG,
    CgroupError,
    keyed,
    read,
    write,
)


class RunGroup:
    """One run's cgroup: one folder per hierarchy (v2: one for all its controllers; v1: one per controller)."""

    def __init__(
        self,
        memory_bytes: int | None,
        pids: int | None,
        name: str | None = None,
        controllers: tuple[str, ...] | None = None,
    ) -> None:
        """`controllers`: use only these (the proven ones, see proven()); None: all that were made."""
        self.name = name or sweep.run_name(uuid.uuid4().hex[:8])
        self.folders: list[tuple[str, Path, tuple[str, ...]]] = []
        try:
            try:
                self._make(memory_bytes, pids, controllers)
            except FileNotFoundError:
                # Another tritonlab process in the same cgroup (a second check daemon, `serve`) released the
                # shared `tritonlab-runs` parent while it was empty (release()): make it again, once. Found
                # on the H200, where a first check's daemon ending broke every run of the next daemon.
                self.remove()
                self.folders = []
                hierarchy.forget_parents()
                self._make(memory_bytes, pids, controllers)
        except OSError as exc:
            self.remove()
            raise CgroupError(exc.errno or errno.EPERM, f"cannot set up the run's cgroup: {exc}") from exc

    def _make(self, memory_bytes: int | None, pids: int | None, controllers: tuple[str, ...] | None) -> None:
        with hierarchy.setup_lock:
            parents = hierarchy.run_parents()
        sweep.sweep([parent for _version, parent, _made in parents])  # a killed server's, once per process
        for version, parent, made in parents:
            used = tuple(c for c in made if controllers is None or c in controllers)
            if not used:
                continue
            folder = Path(parent) / self.name
            folder.mkdir()
            self.folders.append((version, folder, used))
            if "memory" in used and memory_bytes:
                self._memory(version, folder, int(memory_bytes))
            if "pids" in used and pids:
                write(folder / "pids.max", str(int(pids)))
            if "cpu" in used:
                if version == "v2":
                    write(folder / "cpu.weight", str(V2_CPU_WEIGHT))
                else:
                    write(folder / "cpu.shares", str(V1_CPU_SHARES))

    @staticmethod
    def _memory(version: str, folder: Path, limit: int) -> None:
        if version == "v2":
            write(folder / "memory.max", str(limit))
            if (folder / "memory.swap.max").exists():
                write(folder / "memory.swap.max", "0")
            if (folder / "memory.oom.group").exists():
                write(folder / "memory.oom.group", "1")  # an OOM kill takes the whole run
            return
        write(folder / "memory.limit_in_bytes", str(limit))
        if (folder / "memory.memsw.limit_in_bytes").exists():  # memory + swap: no escape into swap
            write(folder / "memory.memsw.limit_in_bytes", str(limit))
        if (folder / "memory.swappiness").exists():
            try:
                write(folder / "memory.swappiness", "0")
            except OSError:
                pass

    def place(self, host_pid: int) -> None:
        """Move a (held, not yet running learner code) process into every folder of this run, and every process
        below it: a warm child waits held in its own PID namespace, below its waiter and init (runs/pidns.py)."""
        try:
            for _version, folder, _controllers in self.folders:
                write(folder / "cgroup.procs", str(host_pid))
        except OSError as exc:
            raise CgroupError(
                exc.errno or errno.EPERM, f"cannot place pid {host_pid} in {self.name}: {exc}"
            ) from exc
        for pid in descendants(host_pid):
            for _version, folder, _controllers in self.folders:
                try:
                    write(folder / "cgroup.procs", str(pid))
                except ProcessLookupError:
                    break  # it ended meanwhile: nothing of it to hold

    def _folder(self, controller: str) -> tuple[str, Path] | None:
        for version, folder, controllers in self.folders:
            if controller in controllers:
                return version, folder
        return None

    def demote(self) -> None:
        """A long run (collect.Run, after LONG_RUN_S): its CPU weight drops to a tenth, below every fresh run's.
        Best effort: a cgroup without the cpu controller, or one already removed, keeps what it had."""
        found = self._folder("cpu")
        if found is None:
            return
        version, folder = found
        try:
            if version == "v2":
                write(folder / "cpu.weight", str(V2_CPU_WEIGHT_LONG))
            else:
                write(folder / "cpu.shares", str(V1_CPU_SHARES_LONG))
        except OSError:
            pass

    def oom_kills(self) -> int:
        found = self._folder("memory")
        if found is None:
            return 0
        version, folder = found
        if version == "v2":
            return keyed(folder / "memory.events", "oom_kill")
        return keyed(folder / "memory.oom_control", "oom_kill")

    def pids_refused(self) -> int:
        """How many forks the pids limit refused."""
        found = self._folder("pids")
        return keyed(found[1] / "pids.events", "max") if found else 0

    def limits_hit(self) -> list[str]:
        hit = []
        if self.oom_kills():
            hit.append("memory")
        if self.pids_refused():
            hit.append("processes")
        return hit

    def pids(self) -> set[int]:
        found: set[int] = set()
        for _version, folder, _controllers in self.folders:
            found.update(int(p) for p in read(folder / "cgroup.procs").split())
        return found

    def kill(self) -> None:
        for version, folder, _controllers in self.folders:
            if version == "v2" and (folder / "cgroup.kill").exists():
                try:
                    write(folder / "cgroup.kill", "1")
                except OSError:
                    pass
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def remove(self, timeout: float = 5.0) -> bool:
        """Kill whatever is left in the run's cgroup, then remove its folders. True when all are gone."""
        deadline = time.monotonic() + timeout
        while True:
            self.kill()
            left = []
            for entry in self.folders:
                try:
                    entry[1].rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    left.append(entry)
            self.folders = left
            if not left or time.monotonic() > deadline:
                return not left
            time.sleep(0.02)


NSPID = "NSpid:" in read(Path("/proc/self/status"))  # False under gVisor versions without it


def _children() -> dict[int, list[int]]:
    """pid -> its children, for every live process of the host's /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """Every live process below host pid `pid`, parents first."""
    children, found, stack = _children(), [], [pid]
    while stack:
        for child in children.get(stack.pop(0), []):
            found.append(child)
            stack.append(child)
    return found


def nspid(pid: int) -> list[int]:
    """The `NSpid` line of a process: its pid in each PID namespace from this /proc's down to its own."""
    for line in read(Path(f"/proc/{pid}/status")).splitlines():
        if line.startswith("NSpid:"):
            return [int(x) for x in line.split()[1:]]
    return []


def host_pid(inner: int, below: int, tag: str = "", level: int | None = None) -> int | None:
    """The host pid of the process that is `inner` in the zygote's PID namespace, among the descendants of host
    pid `below` (the zygote, or the bubblewrap holding it): by field `level` of its `NSpid` line (the zygote's
    namespace; None: the last field, its own), or, on a kernel without one, by the name `tag` the held child
    gave itself (jail.hold_tag). The level matters since runs have PID namespaces of their own (runs/pidns.py):
    a process of another run is 5 in its own namespace and something else in the zygote's.

    First through the kernel's list of each process's children (`/proc/PID/task/TID/children`), from `below`
    down: the held child is one or two levels below the zygote, so that reads a few files where a scan of the
    whole /proc reads every process of the machine's (under the lessons 2–8 load at 16 runs at once a tenth of
    the server's sampled time, H100-80GB-HBM3 run 2026-12-07 (82c912d)). That list may miss a child while siblings
    come and go, so a miss is looked for again in the whole /proc."""
    listed = _walk(inner, below, tag, level, _listed_children)
    if listed is not None:
        return listed
    children = _children()
    return _walk(inner, below, tag, level, lambda pid: children.get(pid, []))


def _walk(
    inner: int, below: int, tag: str, level: int | None, children_of: Callable[[int], list[int]]
) -> int | None:
    stack = [below]
    while stack:
        for pid in children_of(stack.pop()):
            if NSPID:
                fields = nspid(pid)
                at = len(fields) - 1 if level is None else level
                if 0 <= at < len(fields) and fields[at] == inner:
                    return pid
            elif tag and read(Path(f"/proc/{pid}/comm")).strip() == tag:
                return pid
            stack.append(pid)
    return None


def _listed_children(pid: int) -> list[int]:
    """`pid`'s children by the kernel's own list, one file per thread ([] where the kernel keeps none)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            found.extend(int(x) for x in Path(f"/proc/{pid}/task/{tid}/children").read_text().split())
        except (OSError, ValueError):
            continue
    return found


@functools.lru_cache(maxsize=1)
def names_visible() -> bool:
    """Does a name a process gives itself (PR_SET_NAME) show in its /proc/PID/comm here? Checked on a real
    child: the placement's fallback where the kernel has no `NSpid`."""
    script = "import sys; from tritonlab.runs import jail; jail.set_name('tlh-probe'); print(1, flush=True); sys.stdin.readline()"
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
        )
    except OSError:
        return False
    try:
        proc.stdout.readline()  # type: ignore[union-attr]
        return read(Path(f"/proc/{proc.pid}/comm")).strip() == "tlh-probe"
    finally:
        proc.kill()
        proc.wait()


def placement_works(hardened: bool = False) -> bool:
    """Can the parent find a held run's host pid? Through `NSpid`, or, where the kernel has none (gVisor), by
    the name the held child gave itself (checked on a real child: names_visible)."""
    return NSPID or names_visible()
