"""Run cgroups a server killed with SIGKILL left behind are swept when the next one starts (issue 34, item 5),
and only those of its own installation whose maker is gone (runs/cgroups/sweep.py).

Real processes, real cgroups: a "server" of installation A makes a run cgroup with the real code, places a
process in it and is killed with SIGKILL (its cgroup and that process are left behind, as a hostile test
found 13 of them after six kill -9 rounds); a server of installation B is killed the same way; a second
server of A stays alive. Then the next server of A makes its first run cgroup: A's dead server's cgroup is
gone with the process in it, B's and the live server's are still there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tritonlab.runs.cgroups import hierarchy

USABLE, WHY = hierarchy.available()
pytestmark = pytest.mark.skipif(
    not USABLE, reason=f"per-run cgroups cannot be made here (needs root or a delegated subtree): {WHY}"
)
SRC = str(Path(__file__).resolve().parents[2] / "src")

MAKER = r"""
import json, os, sys, time
from tritonlab.runs.cgroups import rungroup
group = rungroup.RunGroup(64 << 20, 64)
child = os.fork()
if child == 0:
    time.sleep(600)
    os._exit(0)
group.place(child)
print(json.dumps({"name": group.name, "folders": [str(f) for _, f, _ in group.folders], "child": child}))
sys.stdout.flush()
time.sleep(600)
"""
NEXT = r"""
import json
from tritonlab.runs.cgroups import rungroup
rungroup.RunGroup(64 << 20, 64).remove()
print(json.dumps({"made": True}))
"""


def server(home: Path, script: str) -> tuple[subprocess.Popen, dict]:
    env = {**os.environ, "TRITONLAB_HOME": str(home), "PYTHONPATH": SRC}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def remove(folders: list[str]) -> None:
    for folder in map(Path, folders):
        if (folder / "cgroup.kill").exists():
            (folder / "cgroup.kill").write_text("1")
        for pid in (folder / "cgroup.procs").read_text().split() if folder.is_dir() else []:
            os.kill(int(pid), signal.SIGKILL)
        for _ in range(100):
            try:
                folder.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


def test_only_the_dead_servers_cgroups_of_this_installation_are_swept(tmp_path: Path) -> None:
    home_a, home_b = tmp_path / "a", tmp_path / "b"
    live, _ = None, None
    made: list[dict] = []
    try:
        dead, dead_info = server(home_a, MAKER)
        other, other_info = server(home_b, MAKER)
        live, live_info = server(home_a, MAKER)
        made = [dead_info, other_info, live_info]
        for proc in (dead, other):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert all(Path(f).is_dir() for info in made for f in info["folders"]), (
            "left behind, as after kill -9"
        )
        assert alive(dead_info["child"]), "the dead server's run is still in its cgroup"

        nxt, _ = server(home_a, NEXT)
        nxt.wait(30)

        assert not any(Path(f).exists() for f in dead_info["folders"]), "the dead server's cgroups were kept"
        for _ in range(50):
            if not alive(dead_info["child"]):
                break
            time.sleep(0.1)
        assert not alive(dead_info["child"]), "the process left in a dead server's cgroup still runs"
        assert all(Path(f).is_dir() for f in other_info["folders"]), "another installation's cgroups went"
        assert all(Path(f).is_dir() for f in live_info["folders"]), "a live server's cgroups went"
    finally:
        if live is not None:
            live.kill()
            live.wait()
        for info in made:
            remove(info["folders"])
