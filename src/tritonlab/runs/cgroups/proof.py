"""The proof behind every limit that is reported: probe processes placed in real run cgroups must be stopped
by each limit before runs rely on it (`probe`, `proven`), and what `doctor` says about it (`report`).

Per controller, honestly: a run's cgroup uses each controller that a probe saw stop something, and only
those. A server whose own v2 cgroup was given only some controllers (the H200 host, gVisor: `memory` only)
still holds its runs for a memory limit; `report()` says per controller whether it is active, not delegated
by this host (read from the server's own `cgroup.controllers`), or off, and what stands in for it.
"""

from __future__ import annotations

import functools
import signal
import subprocess
import sys
import threading

from tritonlab.runs.cgroups.hierarchy import (
    CONTROLLERS,
    V1_CPU_SHARES,
    V2_CPU_WEIGHT,
    available,
    delegation,
    release,
    run_parents,
    wanted_controllers,
)
from tritonlab.runs.cgroups.rungroup import RunGroup, placement_works
from tritonlab.runs.cgroups.sweep import probe_name

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
        made = {c for _version, _parent, controllers in run_parents() for c in controllers}
        if "memory" in made:
            memory = RunGroup(PROBE_MEMORY, 64, name=probe_name("memory"), controllers=("memory",))
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
            pids = RunGroup(None, PROBE_PIDS, name=probe_name("pids"), controllers=("pids",))
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
            made = {c for *_, made_here in run_parents() for c in made_here} if active else set()
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
    "cpu": "the CPU-time limit (RLIMIT_CPU) and the wall-clock limit of each run; runs at once bounded by the "
    "machine's cores (runs/capacity.py)",
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
