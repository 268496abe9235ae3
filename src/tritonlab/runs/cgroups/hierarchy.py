"""Where run cgroups can be made: per controller (memory, pids, cpu) the cgroup v2 hierarchy when the v2 root's
`cgroup.controllers` lists it, else the v1 hierarchy mounted at /sys/fs/cgroup/<name>; what the host delegated
to the server's own cgroup; and the shared `tritonlab-runs` parents the runs nest under, made once per process
and removed by `release()`.

Runs nest under the server's own cgroup (from /proc/self/cgroup): `<own>/tritonlab-runs/run-<id>/`.
v2 "no internal processes": a v2 cgroup holding processes cannot hand controllers to its children, so the
first time, the server's own processes move into a leaf `<own>/tritonlab-server/` (as a systemd service with
`Delegate=yes` would arrange), then `+memory +pids +cpu` are enabled below `<own>`.
TRITONLAB_RUN_CGROUPS chooses which controllers runs may get (`wanted_controllers`).
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")
RUNS = "tritonlab-runs"
SERVER_LEAF = "tritonlab-server"
V1_CPU_SHARES = 512  # the server's default is 1024
V2_CPU_WEIGHT = 50  # the server's default is 100
# A run still going after LONG_RUN_S (rungroup.RunGroup.demote): a tenth of a fresh run's weight, so a run that
# spins until its timeout leaves the CPU to its neighbours' short checks (issue 34); alone, it still gets it all.
V1_CPU_SHARES_LONG = 51
V2_CPU_WEIGHT_LONG = 5
LONG_RUN_S = 5.0

setup_lock = threading.Lock()


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
    listed = read(own / "cgroup.controllers").split()
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


def write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def keyed(path: Path, key: str) -> int:
    """The value of `key` in a flat keyed file (memory.events, memory.oom_control, pids.events)."""
    for line in read(path).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return 0


def _prepare_v2(own: Path, wanted: list[str]) -> Path:
    """Make `<own>/tritonlab-runs` a v2 parent with `wanted` controllers enabled below it."""
    enable = " ".join(f"+{c}" for c in wanted)
    try:
        write(own / "cgroup.subtree_control", enable)
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            raise
        leaf = own / SERVER_LEAF  # no internal processes: move the server's processes into a leaf first
        leaf.mkdir(exist_ok=True)
        for _ in range(5):
            pids = read(own / "cgroup.procs").split()
            if not pids:
                break
            for pid in pids:
                try:
                    write(leaf / "cgroup.procs", pid)
                except OSError:
                    pass  # it exited meanwhile
        write(own / "cgroup.subtree_control", enable)
    runs = own / RUNS
    runs.mkdir(exist_ok=True)
    write(runs / "cgroup.subtree_control", enable)
    if "cpu" in wanted:
        write(runs / "cpu.weight", str(V2_CPU_WEIGHT))
    return runs


_made: dict[tuple[str, ...], tuple[tuple[str, str, tuple[str, ...]], ...]] = {}


def run_parents() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
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
                write(runs / "cpu.shares", str(V1_CPU_SHARES))
            parents.append(("v1", str(runs), (name,)))
    except OSError as exc:
        raise CgroupError(exc.errno or errno.EPERM, f"cannot create run cgroups: {exc}") from exc
    _made[want] = tuple(parents)
    return _made[want]


def forget_parents() -> None:
    """Forget the parents made so far (another tritonlab process removed them): the next run makes them again."""
    with setup_lock:
        _made.clear()


def release() -> None:
    """Remove the (empty) `tritonlab-runs` folders; the next run makes them again."""
    with setup_lock:
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
    with setup_lock:
        try:
            run_parents()
        except CgroupError as exc:
            return False, exc.strerror or str(exc)
    return True, ""
