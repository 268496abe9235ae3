"""A run's mount table names no other run (issue 34, item 5).

A hostile test read other runs' folder names and learner ids in `/proc/self/mountinfo`: each run's capped
folder (`run-<pid>-<random>`) and each learner's compile cache (`.triton/learner-<id>`) is a mount that reaches
the worker by propagation, and every run's mount namespace was a copy of the worker's. Now a hardened run
pivots into a root of its own (runs/rootview.py). Here run B (learner 202) waits while run A (learner 101)
starts and prints its own mount table and every /proc/<pid>/mountinfo it can read; A must find its own folder
and cache there, and nothing of B's. Layer 1 has no private filesystem at all (a run reads the host's mount
table: docs/reliability.md), so this is the hardened layer's test (`auto` where bubblewrap works).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import Bench, bench_in_mode  # noqa: E402

from tritonlab.runs import runfolder  # noqa: E402
from tritonlab.runs.limits import Limits  # noqa: E402

WAIT = """
import os, time
end = time.monotonic() + 60
while time.monotonic() < end and not os.path.exists("stop"):
    time.sleep(0.05)
"""
LOOK = """
import json, os
tables = {}
for entry in os.listdir("/proc"):
    if entry.isdigit() or entry == "self":
        try:
            with open(f"/proc/{entry}/mountinfo") as f:
                tables[entry] = f.read()
        except OSError:
            pass
print(json.dumps({"cwd": os.getcwd(), "tables": tables}))
"""


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    if not shutil.which("bwrap"):
        pytest.skip("needs bubblewrap (bwrap): the hardened layer is what gives a run its own mount table")
    for b in bench_in_mode("auto", tmp_path_factory.mktemp("mounts")):
        if not b.hardened:
            pytest.skip(f"needs the hardened layer: {b.service.hardened_reason}")
        yield b


def start(bench: Bench, program: str, cache: str):  # noqa: ANN201
    zygote = bench.service.zygote()
    run_dir, _warm = zygote.new_run_dir(cache=cache)
    (run_dir / "prog.py").write_text(program)
    (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(run_dir / "prog.py")}))
    return zygote.start(run_dir, Limits(wall_seconds=90)), run_dir


def test_a_run_mount_table_shows_no_other_run(bench: Bench) -> None:
    other, other_dir = start(bench, WAIT, "learner-202")
    try:
        time.sleep(1.0)  # B's folder and cache are mounted, and B is running, before A starts
        cache_b = bench.service.zygote().cache_folder("learner-202")
        if runfolder.wanted():  # as root they are mounts, which the worker's namespace receives
            assert os.path.ismount(other_dir) and os.path.ismount(cache_b), "nothing to hide: not a test"
        mine, my_dir = start(bench, LOOK, "learner-101")
        try:
            result = mine.wait()
        finally:
            runfolder.remove_run_dir(my_dir)
        assert other.status is None, "B ended before A looked: they did not overlap"
    finally:
        (other_dir / "stop").write_text("")
        other.wait()
        runfolder.remove_run_dir(other_dir)
    assert result.exit_code == 0, result.output
    seen = json.loads(result.output.strip().splitlines()[-1])
    tables = seen["tables"]
    assert "self" in tables and str(my_dir) in tables["self"] and "learner-101" in tables["self"], tables
    for name in (other_dir.name, "learner-202"):
        shown = [pid for pid, table in tables.items() if name in table]
        assert not shown, f"{name} is in the mount table of {shown}: {tables[shown[0]]}"
    assert set(tables) <= {"self", "1", "2"}, f"the run reads mount tables beyond its own namespace: {tables}"
