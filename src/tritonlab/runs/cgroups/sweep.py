"""Run cgroups that a server killed with SIGKILL left behind, removed when the next one starts (issue 34).

A killed server removes nothing: a hostile test found 13 empty run cgroups after six kill -9 rounds, never
removed. So a run's cgroup is named `run-<installation>-<server pid>-<random>` (the limits' probes
`probe-memory-<installation>-<pid>` and `probe-pids-…` alike): the installation is a short hash of the data
folder (TRITONLAB_HOME), so two installations on one machine (a classroom server and someone's test run) never
take each other's, and the pid says whether the process that made it still lives. The first run cgroup a
process makes (the limits' probe at the worker's start, or its first run) sweeps each hierarchy's
`tritonlab-runs`: a folder of this installation whose maker is gone has whatever is still in it killed, then
it is removed. A folder of another installation, of a live process, or named the older way (`run-<random>`)
is left alone.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import threading
import time
from pathlib import Path

from tritonlab import config
from tritonlab.runs.cgroups.hierarchy import read, write

NAMED = re.compile(r"^(?:run|probe-memory|probe-pids)-(?P<key>[0-9a-f]{8})-(?P<pid>\d+)(?:-[0-9a-f]+)?$")
_swept: set[str] = set()  # runs parents this process swept already
_lock = threading.Lock()


def installation() -> str:
    """This installation's key: 8 hex digits of a hash of its data folder."""
    return hashlib.sha256(str(config.home().resolve()).encode()).hexdigest()[:8]


def run_name(token: str) -> str:
    """The name of a run cgroup this process makes (`token`: random hex)."""
    return f"run-{installation()}-{os.getpid()}-{token}"


def probe_name(kind: str) -> str:
    return f"probe-{kind}-{installation()}-{os.getpid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale(name: str) -> bool:
    """Is `name` a cgroup of this installation whose maker is gone?"""
    found = NAMED.match(name)
    if found is None or found["key"] != installation():
        return False
    pid = int(found["pid"])
    return pid != os.getpid() and not _alive(pid)


def _remove(folder: Path, timeout: float = 5.0) -> bool:
    """Kill whatever is left in a cgroup folder, then remove it (and any child folders first)."""
    deadline = time.monotonic() + timeout
    while True:
        for child in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            _remove(child, max(0.1, deadline - time.monotonic()))
        if (folder / "cgroup.kill").exists():
            try:
                write(folder / "cgroup.kill", "1")
            except OSError:
                pass
        for pid in read(folder / "cgroup.procs").split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError, ValueError):
                pass
        try:
            folder.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)


def sweep(parents: list[str], again: bool = False) -> list[str]:
    """Remove, under each runs parent folder, the cgroups of this installation whose maker is gone; each parent
    once per process unless `again`. Returns the folders removed."""
    removed = []
    for parent in parents:
        with _lock:
            if parent in _swept and not again:
                continue
            _swept.add(parent)
        try:
            entries = list(Path(parent).iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir() and stale(entry.name) and _remove(entry):
                removed.append(str(entry))
    return removed
