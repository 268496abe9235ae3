"""Per-run resource units (issue 17): each run in its own cgroup, so its processes share ONE budget.

Per controller (memory, pids, cpu) the cgroup v2 hierarchy is used when the v2 root's `cgroup.controllers`
lists it, else the v1 hierarchy mounted at /sys/fs/cgroup/<name>. Runs nest under the server's own cgroup
(from /proc/self/cgroup): `<own>/tritonlab-runs/run-<id>/`.

Placement: the zygote runs inside bubblewrap as an unprivileged user and cannot write cgroup files, so the
PARENT (the server) does it. The zygote forks the child and reports its pid; the child blocks on a pipe
before doing anything else. The parent translates that pid (the zygote's PID namespace) to the host pid (the
`NSpid` line of /proc/<pid>/status of the zygote's descendants), creates the run's cgroup, writes the host
pid into `cgroup.procs` of each hierarchy, and only then tells the zygote to release the child (`go`).
A run that cannot be placed is killed before it imports learner code.

Limits per run: memory (v2 `memory.max`, `memory.swap.max=0`, `memory.oom.group=1`; v1
`memory.limit_in_bytes`, `memory.memsw.limit_in_bytes` where swap accounting exists) covering every process
of the run and the shared memory and files they touch; `pids.max` (processes and threads); a CPU weight
below the server's (v2 `cpu.weight`, v1 `cpu.shares`). After the run every remaining process is killed
(v2 `cgroup.kill`, else SIGKILL to each pid in `cgroup.procs`) and the directories are removed.

v2 "no internal processes": a v2 cgroup holding processes cannot hand controllers to its children, so the
first time, the server's own processes move into a leaf `<own>/tritonlab-server/` (as a systemd service with
`Delegate=yes` would arrange), then `+memory +pids +cpu` are enabled below `<own>`.

`probe()` (doctor) reports a limit as active only after a probe exceeded it and was stopped; "per-run
cgroups" are claimed only when both memory and pids are. A server whose own v2 cgroup was given only some
controllers (seen on a GPU host: `memory` only) gets those, and doctor says which one is missing.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")
RUNS = "tritonlab-runs"
SERVER_LEAF = "tritonlab-server"
V1_CPU_SHARES = 512  # the server's default is 1024
V2_CPU_WEIGHT = 50  # the server's default is 100

_setup_lock = threading.Lock()


class CgroupError(OSError):
    pass


def _v2_root() -> Path | None:
    for candidate in (ROOT, ROOT / "unified"):
        if (candidate / "cgroup.controllers").is_file():
            return candidate
    return None


def own_cgroups() -> dict[str, str]:
    """This process's cgroup per controller (v1: by name; v2: under the key "")."""
    found: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else [""]:
            found[name] = path
    return found


def detect() -> dict[str, dict]:
    """{controller: {"version": "v2"|"v1"|None, "path": the server's own cgroup there, "writable": bool}}."""
    v2 = _v2_root()
    try:
        listed = set((v2 / "cgroup.controllers").read_text().split()) if v2 else set()
    except OSError:
        listed = set()
    own = own_cgroups()
    out: dict[str, dict] = {}
    for name in CONTROLLERS:
        if v2 is not None and name in listed:
            path = v2 / own.get("", "/").lstrip("/")
            out[name] = {"version": "v2", "path": str(path), "writable": os.access(path, os.W_OK)}
            continue
        names = (name, "cpu,cpuacct", "cpuacct,cpu") if name == "cpu" else (name,)
        v1 = next((ROOT / d for d in names if (ROOT / d).is_dir()), None)
        if v1 is not None:
            key = next((k for k in own if name in k.split(",")), None)
            path = v1 / (own.get(key, "/") if key else "/").lstrip("/")
            out[name] = {"version": "v1", "path": str(path), "writable": os.access(path, os.W_OK)}
        else:
            out[name] = {"version": None, "path": None, "writable": False}
    return out


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _keyed(path: Path, key: str) -> int:
    """The value of `key` in a flat keyed file (memory.events, memory.oom_control, pids.events)."""
    for line in _read(path).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return 0


def _prepare_v2(own: Path, wanted: list[str]) -> Path:
    """Make `<own>/tritonlab-runs` a v2 parent with `wanted` controllers enabled below it."""
    enable = " ".join(f"+{c}" for c in wanted)
    try:
        _write(own / "cgroup.subtree_control", enable)
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            raise
        leaf = own / SERVER_LEAF  # no internal processes: move the server's processes into a leaf first
        leaf.mkdir(exist_ok=True)
        for _ in range(5):
            pids = _read(own / "cgroup.procs").split()
            if not pids:
                break
            for pid in pids:
                try:
                    _write(leaf / "cgroup.procs", pid)
                except OSError:
                    pass  # it exited meanwhile
        _write(own / "cgroup.subtree_control", enable)
    runs = own / RUNS
    runs.mkdir(exist_ok=True)
    _write(runs / "cgroup.subtree_control", enable)
    if "cpu" in wanted:
        _write(runs / "cpu.weight", str(V2_CPU_WEIGHT))
    return runs


@functools.lru_cache(maxsize=1)
def _parents() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """((version, runs parent folder, controllers), ...): where run cgroups are made. Raises CgroupError."""
    found = detect()
    missing = [c for c in ("memory", "pids") if not found[c]["version"]]
    if missing:
        raise CgroupError(errno.ENOENT, f"no cgroup hierarchy holds the {' and '.join(missing)} controller")
    v2 = [c for c in CONTROLLERS if found[c]["version"] == "v2"]
    parents: list[tuple[str, str, tuple[str, ...]]] = []
    try:
        if v2:
            own = Path(found[v2[0]]["path"])
            available = set(_read(own / "cgroup.controllers").split())
            usable = [c for c in v2 if c in available]  # what the server's own cgroup was given
            if not usable:
                raise CgroupError(errno.EPERM, f"{own} delegates none of {' '.join(v2)}")
            parents.append(("v2", str(_prepare_v2(own, usable)), tuple(usable)))
        for name in CONTROLLERS:
            if found[name]["version"] != "v1":
                continue
            runs = Path(found[name]["path"]) / RUNS
            runs.mkdir(exist_ok=True)
            if name == "cpu":
                _write(runs / "cpu.shares", str(V1_CPU_SHARES))
            parents.append(("v1", str(runs), (name,)))
    except OSError as exc:
        if isinstance(exc, CgroupError):
            raise
        raise CgroupError(exc.errno or errno.EPERM, f"cannot create run cgroups: {exc}") from exc
    return tuple(parents)


def release() -> None:
    """Remove the (empty) `tritonlab-runs` folders; the next run makes them again."""
    with _setup_lock:
        try:
            parents = _parents() if _parents.cache_info().currsize else ()
        except CgroupError:
            parents = ()
        for _version, parent, _controllers in parents:
            try:
                Path(parent).rmdir()
            except OSError:
                pass  # runs still in it, or already gone
        _parents.cache_clear()


def wanted() -> bool:
    """TRITONLAB_RUN_CGROUPS=auto (default: when available) | off."""
    return os.environ.get("TRITONLAB_RUN_CGROUPS", "auto").strip().lower() not in ("off", "0", "no")


def available() -> tuple[bool, str]:
    """(can runs be placed in per-run cgroups here?, why not)."""
    if not wanted():
        return False, "TRITONLAB_RUN_CGROUPS=off"
    with _setup_lock:
        try:
            _parents()
        except CgroupError as exc:
            return False, exc.strerror or str(exc)
    return True, ""


class RunGroup:
    """One run's cgroup: one folder per hierarchy (v2: one for all its controllers; v1: one per controller)."""

    def __init__(self, memory_bytes: int | None, pids: int | None, name: str | None = None) -> None:
        with _setup_lock:
            parents = _parents()
        self.name = name or f"run-{uuid.uuid4().hex[:12]}"
        self.folders: list[tuple[str, Path, tuple[str, ...]]] = []
        try:
            for version, parent, controllers in parents:
                folder = Path(parent) / self.name
                folder.mkdir()
                self.folders.append((version, folder, controllers))
                if "memory" in controllers and memory_bytes:
                    self._memory(version, folder, int(memory_bytes))
                if "pids" in controllers and pids:
                    _write(folder / "pids.max", str(int(pids)))
                if "cpu" in controllers:
                    if version == "v2":
                        _write(folder / "cpu.weight", str(V2_CPU_WEIGHT))
                    else:
                        _write(folder / "cpu.shares", str(V1_CPU_SHARES))
        except OSError as exc:
            self.remove()
            raise CgroupError(exc.errno or errno.EPERM, f"cannot set up the run's cgroup: {exc}") from exc

    @staticmethod
    def _memory(version: str, folder: Path, limit: int) -> None:
        if version == "v2":
            _write(folder / "memory.max", str(limit))
            if (folder / "memory.swap.max").exists():
                _write(folder / "memory.swap.max", "0")
            if (folder / "memory.oom.group").exists():
                _write(folder / "memory.oom.group", "1")  # an OOM kill takes the whole run
            return
        _write(folder / "memory.limit_in_bytes", str(limit))
        if (folder / "memory.memsw.limit_in_bytes").exists():  # memory + swap: no escape into swap
            _write(folder / "memory.memsw.limit_in_bytes", str(limit))
        if (folder / "memory.swappiness").exists():
            try:
                _write(folder / "memory.swappiness", "0")
            except OSError:
                pass

    def place(self, host_pid: int) -> None:
        """Move a (held, not yet running learner code) process into every folder of this run."""
        try:
            for _version, folder, _controllers in self.folders:
                _write(folder / "cgroup.procs", str(host_pid))
        except OSError as exc:
            raise CgroupError(
                exc.errno or errno.EPERM, f"cannot place pid {host_pid} in {self.name}: {exc}"
            ) from exc

    def _folder(self, controller: str) -> tuple[str, Path] | None:
        for version, folder, controllers in self.folders:
            if controller in controllers:
                return version, folder
        return None

    def oom_kills(self) -> int:
        found = self._folder("memory")
        if found is None:
            return 0
        version, folder = found
        if version == "v2":
            return _keyed(folder / "memory.events", "oom_kill")
        return _keyed(folder / "memory.oom_control", "oom_kill")

    def pids_refused(self) -> int:
        """How many forks the pids limit refused."""
        found = self._folder("pids")
        return _keyed(found[1] / "pids.events", "max") if found else 0

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
            found.update(int(p) for p in _read(folder / "cgroup.procs").split())
        return found

    def kill(self) -> None:
        for version, folder, _controllers in self.folders:
            if version == "v2" and (folder / "cgroup.kill").exists():
                try:
                    _write(folder / "cgroup.kill", "1")
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


def host_pid(inner: int, below: int) -> int | None:
    """The host pid of the process that is `inner` in its own (innermost) PID namespace, among the
    descendants of host pid `below` (the zygote, or the bubblewrap holding it)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    stack = [below]
    while stack:
        for pid in children.get(stack.pop(), []):
            for line in _read(Path(f"/proc/{pid}/status")).splitlines():
                if line.startswith("NSpid:") and int(line.split()[-1]) == inner:
                    return pid
            stack.append(pid)
    return None


# --- the probe doctor runs: a limit is "active" only after it stopped something -------------------------

PROBE_MEMORY = 128 << 20
PROBE_PIDS = 16

_PROBE_SCRIPT = r"""
import os, sys, time
sys.stdin.readline()  # held until the parent placed us
kind, size = sys.argv[1], int(sys.argv[2])
if kind == "memory":
    kids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            block = bytearray(size)
            for i in range(0, size, 4096):
                block[i] = 1
            time.sleep(1)
            os._exit(0)
        kids.append(pid)
    killed = 0
    for pid in kids:
        _, status = os.waitpid(pid, 0)
        killed += os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9
    print(killed)
else:
    forks = 0
    try:
        for _ in range(size):
            if os.fork() == 0:
                time.sleep(1)
                os._exit(0)
            forks += 1
    except OSError:
        pass
    print(forks)
"""


def _probe_one(kind: str, group: RunGroup, size: int) -> tuple[int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _PROBE_SCRIPT, kind, str(size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        group.place(proc.pid)
        out, _ = proc.communicate("go\n", timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return int(out.strip() or 0) if out.strip().isdigit() else -1, out


@functools.lru_cache(maxsize=1)
def probe() -> dict:
    """Place probe processes in real run cgroups and see each limit stop them."""
    ok, why = available()
    result: dict = {"per_run_cgroups": False, "active": [], "reason": why, "evidence": {}}
    if not ok:
        return result
    try:
        memory = RunGroup(PROBE_MEMORY, 64, name=f"probe-memory-{os.getpid()}")
        try:
            if memory._folder("memory"):
                killed, _ = _probe_one("memory", memory, PROBE_MEMORY // 2)  # 3 × 64 MiB under 128 MiB
                result["evidence"]["memory"] = {"limit": PROBE_MEMORY, "children_killed": killed}
                if killed > 0 and memory.oom_kills() > 0:
                    result["active"].append("memory")
        finally:
            memory.remove()
        pids = RunGroup(PROBE_MEMORY, PROBE_PIDS, name=f"probe-pids-{os.getpid()}")
        try:
            if pids._folder("pids"):
                forks, _ = _probe_one("pids", pids, PROBE_PIDS * 4)
                result["evidence"]["pids"] = {"limit": PROBE_PIDS, "forks": forks}
                if 0 <= forks < PROBE_PIDS and pids.pids_refused() > 0:
                    result["active"].append("pids")
        finally:
            pids.remove()
            release()
    except (OSError, subprocess.SubprocessError) as exc:
        result["reason"] = f"the cgroup probe failed: {exc}"
        return result
    result["per_run_cgroups"] = {"memory", "pids"} <= set(result["active"])
    result["reason"] = (
        "a probe exceeded each per-run limit and was stopped"
        if result["per_run_cgroups"]
        else "a probe was NOT stopped by: " + ", ".join(sorted({"memory", "pids"} - set(result["active"])))
    )
    return result


_probe_lock = threading.Lock()


def proven() -> bool:
    """Did the probe see both per-run limits (memory, pids) stop a process here? Cached with probe(); one
    probe at a time (two workers starting together must not race on the probe's folders)."""
    try:
        with _probe_lock:
            return bool(probe()["per_run_cgroups"])
    except Exception:  # noqa: BLE001 - a probe that breaks proves nothing
        return False


def report() -> dict:
    """What doctor says about per-run resource limits (sandbox.run_limits)."""
    found = detect()
    checked = probe()
    out = {
        "per_run_cgroups": checked["per_run_cgroups"],
        "active": checked["active"],
        "reason": checked["reason"],
        "evidence": checked["evidence"],
        "hierarchies": {k: v["version"] for k, v in found.items()},
    }
    if checked["per_run_cgroups"]:
        out["cpu"] = (
            f"runs get a lower CPU weight than the server (v1 cpu.shares {V1_CPU_SHARES} of 1024, v2 "
            f"cpu.weight {V2_CPU_WEIGHT} of 100); set, not probed"
        )
    if not checked["per_run_cgroups"]:
        out["note"] = (
            "per-run cgroups are not available: memory, file-size and process limits apply per process "
            "(RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NPROC), so the processes of one run can together exceed them"
        )
    return out
