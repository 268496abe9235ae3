"""Per-run cgroups (issue 17): a run is one resource unit. Its processes share one memory limit and one
pids limit, it is placed before it runs learner code, and its cgroup is gone after the run."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import FORK_LOOP, FORKED_MEMORY, Bench  # noqa: E402

from tritonlab.runs.cgroups import hierarchy, proof  # noqa: E402

USABLE, WHY = hierarchy.available()
pytestmark = pytest.mark.skipif(
    not USABLE, reason=f"per-run cgroups cannot be made here (needs root or a delegated subtree): {WHY}"
)

PIDS = 24  # FORK_LOOP's pids.max


def run_folders(name: str) -> list[Path]:
    """The cgroup folders of the run `name` below this server's tritonlab-runs parents (other servers on
    this machine may share a v1 hierarchy's parent: only this run's own name counts)."""
    found = []
    for info in hierarchy.detect().values():
        folder = Path(info["path"] or "/nonexistent") / hierarchy.RUNS / name
        if folder.is_dir():
            found.append(folder)
    return found


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    b = Bench(tmp_path)
    assert b.zygote.run_cgroups, "the worker should place runs in cgroups on this machine"
    yield b
    b.close()


def test_forked_children_share_one_memory_limit(bench: Bench) -> None:
    record = bench.run(FORKED_MEMORY)
    run = record.outcome.run
    assert run is not None, record.outcome.error
    assert run.cgroup and "memory" in run.cgroup_controllers, run
    if hierarchy.delegation()["cpu"]["delegated"]:  # the lower CPU weight rides along with the proven limits
        assert "cpu" in run.cgroup_controllers, run.cgroup_controllers
    assert "ALL HELD" not in run.output, run.output
    assert "memory" in run.limits_hit, (run.limits_hit, run.output)
    assert not record.leftover, "processes outlived the run"
    assert not run_folders(run.cgroup), "this run's cgroup outlived it"


def test_fork_loop_stops_at_pids_max(bench: Bench) -> None:
    if "pids" not in (bench.zygote.cgroup_controllers or ()):  # the H200 host delegates memory only
        pytest.skip(f"pids: {proof.report()['controllers']['pids']}")
    record = bench.run(FORK_LOOP)
    run = record.outcome.run
    assert run is not None, record.outcome.error
    assert run.cgroup and "pids" in run.cgroup_controllers, run
    assert "refused: never" not in run.output, run.output
    forked = int(run.output.split("forked ")[1].split(";")[0])
    assert forked < PIDS, run.output
    assert "processes" in run.limits_hit, (run.limits_hit, run.output)
    assert not record.leftover
    assert not run_folders(run.cgroup), "this run's cgroup outlived it"


def test_doctor_probe_says_per_controller_what_stopped_something() -> None:
    """Each controller this host delegates was proven by its probe; one it does not is reported as such,
    with the reason and what stands in for it (here: all three; on the H200 host: memory only)."""
    report = proof.report()
    given = hierarchy.delegation()
    assert report["per_run_cgroups"] is True and report["memory_limit"] is True, report
    assert report["evidence"]["memory"]["oom_kills"] >= 1
    for name in ("memory", "pids"):
        state = report["controllers"][name]
        if given[name]["delegated"]:
            assert state["state"] == "active" and name in report["active"], state
        else:
            assert state["state"] == "not delegated by this host" and state["instead"], state
    assert report["complete"] is (given["pids"]["delegated"] and "pids" in report["active"])
    if "pids" in report["active"]:
        assert report["evidence"]["pids"]["forks"] < proof.PROBE_PIDS
