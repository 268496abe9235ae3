"""Per-run resource units (issue 17): which cgroup hierarchy could hold each run, per controller.

Only detection so far: for each controller a run needs (memory, pids, cpu) the cgroup v2 hierarchy is chosen
when the v2 root's `cgroup.controllers` lists it, else the v1 hierarchy mounted at /sys/fs/cgroup/<name> when
it is writable. Runs are NOT placed in cgroups yet: memory, disk and process limits are per process
(RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NPROC), so several processes of one run can together exceed them.
`tritonlab doctor --json` says so (sandbox.run_limits), and reports a per-run limit as active only once a
probe has exceeded it and been stopped.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")


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
    listed = set((v2 / "cgroup.controllers").read_text().split()) if v2 else set()
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


def report() -> dict:
    """What doctor says about per-run resource limits: available hierarchies, and that none is applied."""
    found = detect()
    return {
        "per_run_cgroups": False,
        "active": [],
        "available": {k: v for k, v in found.items() if v["version"] and v["writable"]},
        "unavailable": sorted(k for k, v in found.items() if not (v["version"] and v["writable"])),
        "note": "runs are not yet placed in per-run cgroups: memory, file-size and process limits apply per "
        "process (RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NPROC), so the processes of one run can together exceed "
        "them; the run directory is not size- or inode-capped",
    }
