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

Per controller, honestly: a run's cgroup uses each controller that a probe saw stop something, and only
those. A server whose own v2 cgroup was given only some controllers (the H200 host, gVisor: `memory` only)
still holds its runs for a memory limit; `report()` says per controller whether it is active, not delegated
by this host (read from the server's own `cgroup.controllers`), or off, and what stands in for it.
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
    """This process's cgroup per controller (v1: by name; v2: under the key ""). A server that already moved
    itself into its `tritonlab-server` leaf (_prepare_v2) still owns the folder above it."""
    found: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, names, path = line.split(":", 2)
        if path.rstrip("/").endswith("/" + SERVER_LEAF):
            path = path.rstrip("/").removesuffix("/" + SERVER_LEAF) or "/"
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


def v2_delegated(own: Path, name: str) -> tuple[bool, str]:
    """Did the host give the server's own v2 cgroup `own` the controller `name`? (its `cgroup.controllers`)"""
    listed = _read(own / "cgroup.controllers").split()
    if name in listed:
        return True, f"{own}/cgroup.controllers lists it"
    return False, f"not delegated by this host: {own}/cgroup.controllers lists only " + (
        " ".join(listed) or "nothing"
    )


def delegation() -> dict[str, dict]:
    """Per controller: may this server give runs their own cgroup with it? {"version", "delegated", "reason"}.
    v2: only what the server's own cgroup lists in its `cgroup.controllers` (what the host delegated)."""
    out: dict[str, dict] = {}
    for name, info in detect().items():
        if info["version"] is None:
            out[name] = {"version": None, "delegated": False, "reason": f"no cgroup hierarchy holds {name}"}
            continue
        own = Path(info["path"])
        if info["version"] == "v2":
            ok, reason = v2_delegated(own, name)
        else:
            ok = bool(info["writable"])
            reason = f"v1 {own} is writable" if ok else f"v1 {own} is not writable by this user"
        out[name] = {"version": info["version"], "delegated": ok, "reason": reason}
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


_made: dict[tuple[str, ...], tuple[tuple[str, str, tuple[str, ...]], ...]] = {}


def _parents() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """((version, runs parent folder, controllers), ...): where run cgroups are made, for the controllers
    wanted (TRITONLAB_RUN_CGROUPS) that this host delegates. Raises CgroupError when there are none."""
    want = wanted_controllers()
    if want in _made:
        return _made[want]
    found, given = detect(), delegation()
    usable = [c for c in want if given[c]["delegated"]]
    if not usable:
        reasons = "; ".join(f"{c}: {given[c]['reason']}" for c in want)
        raise CgroupError(errno.ENOENT, reasons or "TRITONLAB_RUN_CGROUPS=off")
    v2 = [c for c in usable if found[c]["version"] == "v2"]
    parents: list[tuple[str, str, tuple[str, ...]]] = []
    try:
        if v2:
            parents.append(("v2", str(_prepare_v2(Path(found[v2[0]]["path"]), v2)), tuple(v2)))
        for name in usable:
            if found[name]["version"] != "v1":
                continue
            runs = Path(found[name]["path"]) / RUNS
            runs.mkdir(exist_ok=True)
            if name == "cpu":
                _write(runs / "cpu.shares", str(V1_CPU_SHARES))
            parents.append(("v1", str(runs), (name,)))
    except OSError as exc:
        raise CgroupError(exc.errno or errno.EPERM, f"cannot create run cgroups: {exc}") from exc
    _made[want] = tuple(parents)
    return _made[want]


def release() -> None:
    """Remove the (empty) `tritonlab-runs` folders; the next run makes them again."""
    with _setup_lock:
        for parents in _made.values():
            for _version, parent, _controllers in parents:
                try:
                    Path(parent).rmdir()
                except OSError:
                    pass  # runs still in it, or already gone
        _made.clear()


def wanted_controllers() -> tuple[str, ...]:
    """TRITONLAB_RUN_CGROUPS=auto (default: every controller the host delegates) | off | a list of controllers
    (`memory`, `memory,pids`): which ones runs may get."""
    value = os.environ.get("TRITONLAB_RUN_CGROUPS", "auto").strip().lower()
    if value in ("off", "0", "no", "none"):
        return ()
    if value in ("", "auto", "on", "1", "yes"):
        return CONTROLLERS
    named = set(value.replace(",", " ").split())
    return tuple(c for c in CONTROLLERS if c in named)


def wanted() -> bool:
    return bool(wanted_controllers())


def available() -> tuple[bool, str]:
    """(can runs be placed in per-run cgroups here, with at least one controller?, why not)."""
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

    def __init__(
        self,
        memory_bytes: int | None,
        pids: int | None,
        name: str | None = None,
        controllers: tuple[str, ...] | None = None,
    ) -> None:
        """`controllers`: use only these (the proven ones, see proven()); None: all that were made."""
        self.name = name or f"run-{uuid.uuid4().hex[:12]}"
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
                with _setup_lock:
                    _made.clear()
                self._make(memory_bytes, pids, controllers)
        except OSError as exc:
            self.remove()
            raise CgroupError(exc.errno or errno.EPERM, f"cannot set up the run's cgroup: {exc}") from exc

    def _make(self, memory_bytes: int | None, pids: int | None, controllers: tuple[str, ...] | None) -> None:
        with _setup_lock:
            parents = _parents()
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
                _write(folder / "pids.max", str(int(pids)))
            if "cpu" in used:
                if version == "v2":
                    _write(folder / "cpu.weight", str(V2_CPU_WEIGHT))
                else:
                    _write(folder / "cpu.shares", str(V1_CPU_SHARES))

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


NSPID = "NSpid:" in _read(Path("/proc/self/status"))  # False under gVisor versions without it


def host_pid(inner: int, below: int, tag: str = "") -> int | None:
    """The host pid of the process that is `inner` in its own (innermost) PID namespace, among the
    descendants of host pid `below` (the zygote, or the bubblewrap holding it): by the last field of its
    `NSpid` line, or, on a kernel without one, by the name `tag` the held child gave itself (jail.hold_tag)."""
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
            if NSPID:
                lines = [x for x in _read(Path(f"/proc/{pid}/status")).splitlines() if x.startswith("NSpid:")]
                if lines and int(lines[0].split()[-1]) == inner:
                    return pid
            elif tag and _read(Path(f"/proc/{pid}/comm")).strip() == tag:
                return pid
            stack.append(pid)
    return None


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
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
    except OSError:
        return False
    try:
        proc.stdout.readline()  # type: ignore[union-attr]
        return _read(Path(f"/proc/{proc.pid}/comm")).strip() == "tlh-probe"
    finally:
        proc.kill()
        proc.wait()


def placement_works(hardened: bool = False) -> bool:
    """Can the parent find a held run's host pid? Through `NSpid`, or, where the kernel has none (gVisor), by
    the name the held child gave itself (checked on a real child: names_visible)."""
    return NSPID or names_visible()


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


def _probe_one(kind: str, group: RunGroup, size: int) -> tuple[int, int]:
    """(the number the probe printed, or -1 when it printed none; the probe's return code)."""
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
    return (int(out.strip()) if out.strip().isdigit() else -1), proc.returncode


def memory_stopped(children_killed: int, returncode: int | None, oom_kills: int) -> bool:
    """Did the memory limit stop the probe? The cgroup counted an OOM kill AND the kill reached the probe:
    one of its children (v1, or v2 without a group kill), or the probe itself, SIGKILLed with the whole group
    (v2 `memory.oom.group=1`; seen under gVisor, where the probe then prints nothing)."""
    return oom_kills > 0 and (children_killed > 0 or returncode == -signal.SIGKILL)


@functools.lru_cache(maxsize=4)
def _probe(want: tuple[str, ...]) -> dict:
    ok, why = available()
    result: dict = {"per_run_cgroups": False, "complete": False, "active": [], "reason": why, "evidence": {}}
    if not ok:
        return result
    active = result["active"]
    try:
        made = {c for _version, _parent, controllers in _parents() for c in controllers}
        if "memory" in made:
            memory = RunGroup(PROBE_MEMORY, 64, name=f"probe-memory-{os.getpid()}", controllers=("memory",))
            try:
                killed, code = _probe_one("memory", memory, PROBE_MEMORY // 2)  # 3 × 64 MiB under 128 MiB
                kills = memory.oom_kills()
                result["evidence"]["memory"] = {
                    "limit": PROBE_MEMORY,
                    "children_killed": killed,
                    "probe_sigkilled": code == -signal.SIGKILL,
                    "oom_kills": kills,
                }
                if memory_stopped(killed, code, kills):
                    active.append("memory")
            finally:
                memory.remove()
        if "pids" in made:
            pids = RunGroup(None, PROBE_PIDS, name=f"probe-pids-{os.getpid()}", controllers=("pids",))
            try:
                forks, _code = _probe_one("pids", pids, PROBE_PIDS * 4)
                result["evidence"]["pids"] = {"limit": PROBE_PIDS, "forks": forks}
                if 0 <= forks < PROBE_PIDS and pids.pids_refused() > 0:
                    active.append("pids")
            finally:
                pids.remove()
        release()
    except (OSError, subprocess.SubprocessError) as exc:
        result["reason"] = f"the cgroup probe failed: {exc}"
        result["active"] = []
        return result
    result["per_run_cgroups"] = bool(active)
    result["complete"] = {"memory", "pids"} <= set(active)
    missing = [c for c in ("memory", "pids") if c not in active]
    result["reason"] = (
        "a probe exceeded each per-run limit and was stopped"
        if not missing
        else (f"a probe was stopped by: {', '.join(active)}; " if active else "")
        + "NOT by: "
        + ", ".join(missing)
    )
    return result


def probe() -> dict:
    """Place probe processes in real run cgroups and see each limit stop them (cached per controller set).
    One probe at a time: a worker's probe thread and `report()` (doctor, serve) asking at once must not run
    two probes on the same folders, where one breaks the other and its failure stays cached."""
    with _probe_lock:
        return _probe(wanted_controllers())


probe.cache_clear = _probe.cache_clear  # type: ignore[attr-defined]

_probe_lock = threading.RLock()  # proven() holds it around probe()


def proven(hardened: bool = False) -> tuple[str, ...]:
    """The controllers a probe saw stop something here, usable for runs of a (hardened or not) worker; ()
    when none, or when its runs cannot be placed (placement_works). One probe at a time (two workers starting
    together must not race on the probe's folders)."""
    try:
        with _probe_lock:
            active = tuple(probe()["active"])
            made = {c for *_, made_here in _parents() for c in made_here} if active else set()
    except Exception:  # noqa: BLE001 - a probe that breaks proves nothing
        return ()
    if not active or not placement_works(hardened):
        return ()
    return active + (("cpu",) if "cpu" in made else ())  # the CPU weight rides along: set, not probed


INSTEAD = {
    "memory": "RLIMIT_AS per process on the interpreter; on a GPU none (CUDA reserves a large address space), "
    "only the soft GPU memory cap in torch's allocator",
    "pids": "RLIMIT_NPROC per run in the hardened layer (the run's own user namespace counts only its "
    "processes and threads); layer 1: the wall-clock limit and the whole-tree kill",
    "cpu": "the CPU-time limit (RLIMIT_CPU) and the wall-clock limit of each run; one GPU run at a time",
}


def controllers_report(checked: dict, given: dict[str, dict]) -> dict[str, dict]:
    """Per controller: its state ("active": a probe was stopped by it; "set, not probed" (cpu); "not
    delegated by this host"; "switched off"; "not stopped by its probe"; "unavailable"), why, and what
    stands in for it where it is not active."""
    want = wanted_controllers()
    out: dict[str, dict] = {}
    for name in CONTROLLERS:
        info = given[name]
        entry: dict = {"version": info["version"], "reason": info["reason"]}
        if name in checked["active"]:
            entry["state"] = "active"
            entry["evidence"] = checked["evidence"][name]
        elif name not in want:
            entry["state"], entry["reason"] = "switched off", "TRITONLAB_RUN_CGROUPS does not name it"
        elif not info["delegated"]:
            entry["state"] = "not delegated by this host"
        elif name == "cpu" and checked["per_run_cgroups"]:
            entry["state"] = "set, not probed"
            entry["reason"] = (
                f"runs get a lower CPU weight than the server (v1 cpu.shares {V1_CPU_SHARES} of 1024, "
                f"v2 cpu.weight {V2_CPU_WEIGHT} of 100)"
            )
        elif name in checked["evidence"]:
            entry["state"] = "not stopped by its probe"
            entry["evidence"] = checked["evidence"][name]
        else:
            entry["state"], entry["reason"] = "unavailable", checked["reason"] or info["reason"]
        if entry["state"] not in ("active", "set, not probed"):
            entry["instead"] = INSTEAD[name]
        out[name] = entry
    return out


def report(hardened: bool = False) -> dict:
    """What doctor says about per-run resource limits (sandbox.run_limits), per controller."""
    found = delegation()
    checked = probe()
    placed = placement_works(hardened)
    out = {
        "per_run_cgroups": bool(checked["per_run_cgroups"]) and placed,
        "memory_limit": "memory" in checked["active"] and placed,
        "complete": bool(checked["complete"]) and placed,
        "active": list(checked["active"]) if placed else [],
        "reason": checked["reason"],
        "evidence": checked["evidence"],
        "hierarchies": {k: v["version"] for k, v in found.items()},
        "controllers": controllers_report(checked, found),
    }
    if not out["complete"] and checked["per_run_cgroups"]:
        out["reason"] = "; ".join(
            f"{name}: {entry['state']}" + ("" if entry["state"] == "active" else f" ({entry['reason']})")
            for name, entry in out["controllers"].items()
            if name != "cpu"
        )
    if checked["per_run_cgroups"] and not placed:
        out["reason"] = (
            "the limits work, but a held run cannot be found to place it: this kernel has no NSpid line in "
            "/proc/PID/status and a process's own name does not show in /proc/PID/comm"
        )
    if not out["per_run_cgroups"]:
        out["note"] = (
            "per-run cgroups are not available: memory, file-size and process limits apply per process "
            "(RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NPROC), so the processes of one run can together exceed them"
        )
    elif not out["complete"]:
        out["note"] = "per-run cgroups hold only: " + ", ".join(out["active"]) + "; see controllers"
    return out
