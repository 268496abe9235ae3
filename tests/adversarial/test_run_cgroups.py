"""Per-run cgroups (issue 17): a run is one resource unit. Its processes share one memory limit and one
pids limit, it is placed before it runs learner code, and its cgroup is gone after the run."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import FORK_LOOP, FORKED_MEMORY, Bench  # noqa: E402

from tritonlab.runs import cgroups  # noqa: E402

USABLE, WHY = cgroups.available()
pytestmark = pytest.mark.skipif(
    not USABLE, reason=f"per-run cgroups cannot be made here (needs root or a delegated subtree): {WHY}"
)

PIDS = 24  # FORK_LOOP's pids.max


def run_folders() -> list[Path]:
    """Every run-* cgroup folder below this server's tritonlab-runs parents."""
    found = []
    for info in cgroups.detect().values():
        parent = Path(info["path"] or "/nonexistent") / cgroups.RUNS
        if parent.is_dir():
            found += [p for p in parent.iterdir() if p.is_dir() and p.name.startswith("run-")]
    return found


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    b = Bench(tmp_path)
    assert b.zygote.run_cgroups, "the worker should place runs in cgroups on this machine"
    yield b
    b.close()


def test_forked_children_share_one_memory_limit(bench: Bench) -> None:
    before = set(run_folders())  # a server SIGKILLed by another test cannot clean up after itself
    record = bench.run(FORKED_MEMORY)
    run = record.outcome.run
    assert run is not None, record.outcome.error
    assert "ALL HELD" not in run.output, run.output
    assert "memory" in run.limits_hit, (run.limits_hit, run.output)
    assert not record.leftover, "processes outlived the run"
    assert set(run_folders()) <= before, "this run's cgroup outlived it"


def test_fork_loop_stops_at_pids_max(bench: Bench) -> None:
    before = set(run_folders())
    record = bench.run(FORK_LOOP)
    run = record.outcome.run
    assert run is not None, record.outcome.error
    assert "refused: never" not in run.output, run.output
    forked = int(run.output.split("forked ")[1].split(";")[0])
    assert forked < PIDS, run.output
    assert "processes" in run.limits_hit, (run.limits_hit, run.output)
    assert not record.leftover
    assert set(run_folders()) <= before, "this run's cgroup outlived it"


def test_doctor_probe_sees_both_limits_stop_something() -> None:
    report = cgroups.report()
    assert report["per_run_cgroups"] is True, report
    assert set(report["active"]) == {"memory", "pids"}
    assert report["evidence"]["memory"]["children_killed"] >= 1
    assert report["evidence"]["pids"]["forks"] < cgroups.PROBE_PIDS
