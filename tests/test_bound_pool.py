"""Warm hardened children (pool.BoundPool): a child isolates itself ahead of time into the run directory the
zygote made for a coming run, then waits for that run's job. Interpreter backend, real bubblewrap."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tritonlab.runs import hardening, pool, runfolder, sandbox
from tritonlab.runs.limits import default_limits
from tritonlab.runs.zygote import parent_links

AGE = """
import os
ticks = os.sysconf("SC_CLK_TCK")
with open("/proc/self/stat") as f:
    started = int(f.read().rsplit(")", 1)[1].split()[19]) / ticks
with open("/proc/uptime") as f:
    uptime = float(f.read().split()[0])
here = sorted(os.listdir(os.path.dirname(os.getcwd())))
print(json.dumps({"age": uptime - started, "runs_folder": here, "cwd": os.getcwd()}))
"""


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    os.environ["TRITONLAB_HOME"] = str(tmp_path_factory.mktemp("home"))
    report = hardening.probe("interpreter")
    if not report["hardened"]:
        pytest.skip(f"needs the hardened layer (bubblewrap): {report['reason']}")
    z = sandbox.Zygote("interpreter", hardened=True, pool=1)
    z.wait_ready()
    yield z
    z.close()


def run_age(z: sandbox.Zygote, run_dir: Path) -> dict:
    (run_dir / "prog.py").write_text("import json\n" + AGE)
    (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(run_dir / "prog.py")}))
    result = z.start(run_dir, default_limits("interpreter", 30)).wait()
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])


def test_wanted_only_when_the_caller_takes_its_run_dirs_from_the_zygote(monkeypatch) -> None:
    monkeypatch.delenv("TRITONLAB_POOL", raising=False)
    assert pool.wanted("gpu", hardened=True) == 0
    assert pool.wanted("gpu", hardened=True, bound=True) == 2  # a check's run and its replay
    assert pool.wanted("interpreter", hardened=True, bound=True) == 0


def test_a_run_in_a_warm_directory_starts_in_the_child_made_ahead(zygote: sandbox.Zygote) -> None:
    for _ in range(2):  # the first, then the refill
        run_dir, warm = zygote.new_run_dir()
        assert warm
        time.sleep(1.5)  # the job comes late: its process was there before it
        try:
            seen = run_age(zygote, run_dir)
        finally:
            runfolder.remove_run_dir(run_dir)
        assert seen["age"] > 1.0, seen
        # the walls are those of an on-demand hardened run: only its own directory in the runs folder
        # (and the folder of its compile cache: runs/caches.py)
        assert seen["runs_folder"] == sorted([run_dir.name, ".triton"]) and seen["cwd"] == str(run_dir)
    cold = runfolder.new_run_dir()  # a directory the zygote did not make: forked on demand, as before
    try:
        time.sleep(1.5)
        seen = run_age(zygote, cold)
    finally:
        runfolder.remove_run_dir(cold)
    assert seen["age"] < 1.0 and seen["runs_folder"] == [cold.name]


def test_a_directory_given_up_ends_its_child(zygote: sandbox.Zygote) -> None:
    def children() -> (
        int
    ):  # bubblewrap, its init, the zygote, then the zygote's children: the warm ones (each
        # the waiter of its own PID namespace, with the namespace's init and the run below it: runs/pidns.py)
        links = parent_links()
        inits = {p for p, parent in links.items() if parent == zygote.proc.pid}
        zygotes = {p for p, parent in links.items() if parent in inits}
        return sum(parent in zygotes for parent in links.values())

    for _ in range(5):  # each one given up without a run: its child must not stay behind
        run_dir, warm = zygote.new_run_dir()
        assert warm
        time.sleep(0.8)  # its child isolated itself into it and waits (else it just dies: no directory)
        runfolder.remove_run_dir(run_dir)
    run_dir, warm = zygote.new_run_dir()  # and they did not turn warming off
    try:
        assert warm
        # The drops and the last forks reach the zygote a little later: wait until the count holds (1 s).
        # Expected: this last directory's child, and the pool's next one warming up already (caches.warm_plan).
        expected = 1 + zygote.pool
        deadline, steady_since = time.monotonic() + 20, None
        while time.monotonic() < deadline:
            if children() != expected:
                steady_since = None
            elif steady_since is None:
                steady_since = time.monotonic()
            elif time.monotonic() - steady_since > 1.0:
                break
            time.sleep(0.05)
        assert children() == expected  # nothing left of the five directories given up
        time.sleep(1.5)
        assert run_age(zygote, run_dir)["age"] > 1.0
    finally:
        runfolder.remove_run_dir(run_dir)


def test_stop_kills_a_warm_run(zygote: sandbox.Zygote) -> None:
    run_dir, warm = zygote.new_run_dir()
    assert warm
    try:
        (run_dir / "prog.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")
        (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(run_dir / "prog.py")}))
        run = zygote.start(run_dir, default_limits("interpreter", 60))
        shown: list[str] = []

        def on_output(text: str) -> None:
            shown.append(text)
            if "up" in "".join(shown):
                run.stop()

        began = time.monotonic()
        result = run.wait(on_output)
    finally:
        runfolder.remove_run_dir(run_dir)
    assert result.stopped and time.monotonic() - began < 10
