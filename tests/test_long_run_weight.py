"""A run that goes on past LONG_RUN_S gets a tenth of a fresh run's CPU weight (collect.Run, RunGroup.demote), so
a learner's file spinning until its timeout leaves the CPU to the neighbours' short checks (issue 34). A real
run through the service's worker, its cgroup read from outside while it spins: a fresh run's weight at 1 s,
a tenth of it past LONG_RUN_S.
Skipped, with the reason, where runs get no cgroup with the cpu controller."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_web_api import make_course

from tritonlab.runs.cgroups import hierarchy
from tritonlab.service import Service

SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Service]:
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    made = Service(course_dir=make_course(tmp_path), workspace_dir=tmp_path / "ws", backend="interpreter")
    try:
        zygote = made.zygote()
        zygote.wait_ready()
        if not zygote.run_cgroups or "cpu" not in (zygote.cgroup_controllers or ()):
            print("SKIP: runs get no cgroup with the cpu controller here")
            pytest.skip("runs get no cgroup with the cpu controller here")
        yield made
    finally:
        made.close()


def weight(run) -> int:  # noqa: ANN001
    for version, folder, controllers in run.group.folders:
        if "cpu" in controllers:
            name = "cpu.weight" if version == "v2" else "cpu.shares"
            return int((folder / name).read_text())
    raise AssertionError("the run's cgroup has no cpu controller")


def spin(service: Service, tmp_path: Path, seconds: float) -> tuple[list[int], threading.Thread]:
    """Run a file that spins `seconds`; its cgroup's weight read at 1 s and at LONG_RUN_S + 2 s of its life."""
    file = tmp_path / f"spin{seconds}.py"
    file.write_text(SPIN.format(seconds=seconds))
    seen: list[int] = []
    runs: list = []
    thread = threading.Thread(
        target=service.run_file, args=(file,), kwargs={"on_start": runs.append, "timeout": 60}, daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 60
    while not (runs and runs[0].group is not None):
        assert time.monotonic() < deadline, "the run never got its cgroup"
        time.sleep(0.02)
    started = runs[0].started
    for at in (1.0, hierarchy.LONG_RUN_S + 2.0):
        time.sleep(max(0.0, started + at - time.monotonic()))
        if runs[0].status is None:
            seen.append(weight(runs[0]))
    return seen, thread


def test_a_run_keeps_its_weight_at_first_and_yields_the_cpu_once_long(
    service: Service, tmp_path: Path
) -> None:
    seen, thread = spin(service, tmp_path, hierarchy.LONG_RUN_S + 6)
    thread.join(60)
    fresh, long = (hierarchy.V2_CPU_WEIGHT, hierarchy.V2_CPU_WEIGHT_LONG)
    if seen and seen[0] == hierarchy.V1_CPU_SHARES:  # a cgroup v1 host
        fresh, long = (hierarchy.V1_CPU_SHARES, hierarchy.V1_CPU_SHARES_LONG)
    assert seen == [fresh, long], seen
    assert long * 10 <= fresh + 1
