"""Per-controller honesty (issue 17, round 3): a run's cgroup uses whatever controllers a probe proved, memory
alone included (the H200 host, under gVisor, delegates only `memory`); the memory probe counts as stopped
when the group kill took the probe itself; doctor says per controller what is active, what this host does
not delegate and why, and what stands in for it."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import FORKED_MEMORY, Bench  # noqa: E402

from tritonlab.cli import serve as cli_serve  # noqa: E402
from tritonlab.runs.cgroups import hierarchy, proof, rungroup  # noqa: E402

USABLE, WHY = hierarchy.available()
needs_cgroups = pytest.mark.skipif(not USABLE, reason=f"per-run cgroups cannot be made here: {WHY}")


@pytest.fixture
def memory_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This host as the H200 sees it: only the memory controller for runs."""
    monkeypatch.setenv("TRITONLAB_RUN_CGROUPS", "memory")
    proof.probe.cache_clear()
    yield
    hierarchy.release()
    proof.probe.cache_clear()


@needs_cgroups
def test_memory_alone_holds_runs_and_stops_a_forked_hog(memory_only: None, tmp_path: Path) -> None:
    report = proof.report()
    assert report["per_run_cgroups"] is True and report["memory_limit"] is True, report
    assert report["active"] == ["memory"] and report["complete"] is False
    pids = report["controllers"]["pids"]
    assert pids["state"] == "switched off" and "RLIMIT_NPROC" in pids["instead"], pids
    assert report["controllers"]["memory"]["state"] == "active"
    bench = Bench(tmp_path)
    try:
        assert bench.zygote.run_cgroups, "memory alone must be worth holding runs for"
        assert bench.zygote.cgroup_controllers == ("memory",)
        record = bench.run(FORKED_MEMORY)
    finally:
        bench.close()
    run = record.outcome.run
    assert run is not None, record.outcome.error
    assert run.cgroup_controllers == ("memory",), run
    assert "memory" in run.limits_hit and "ALL HELD" not in run.output, (run.limits_hit, run.output)
    assert record.recovered and not record.leftover


@needs_cgroups
def test_probe_killed_with_its_group_counts_as_stopped(memory_only: None) -> None:
    """Under gVisor the OOM kill took the probe's parent too and it printed nothing (children_killed -1):
    a process that is itself SIGKILLed by its cgroup's memory limit is a stopped probe."""
    group = rungroup.RunGroup(64 << 20, None, name="probe-self-test", controllers=("memory",))
    try:
        hog = "import sys; sys.stdin.readline(); b = bytearray(256 << 20); b[::4096] = b'x' * len(b[::4096]); print(1)"
        proc = subprocess.Popen(
            [sys.executable, "-c", hog], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        group.place(proc.pid)
        out, _ = proc.communicate("go\n", timeout=60)
        kills = group.oom_kills()
    finally:
        group.remove()
    assert proc.returncode == -signal.SIGKILL and out == "", (proc.returncode, out)
    assert kills > 0
    assert proof.memory_stopped(-1, proc.returncode, kills) is True
    assert proof.memory_stopped(-1, proc.returncode, 0) is False  # killed, but not by the limit
    assert proof.memory_stopped(0, 0, kills) is False  # the limit fired, but the probe ran on


def test_a_controller_the_host_does_not_delegate_says_why_and_what_stands_in() -> None:
    """A v2 host that delegates memory only (the H200): pids and cpu are 'not delegated by this host', with
    the server's own cgroup.controllers quoted, and what replaces each."""
    given = {
        "memory": {"version": "v2", "delegated": True, "reason": "/cg/own/cgroup.controllers lists it"},
        "pids": {
            "version": "v2",
            "delegated": False,
            "reason": "not delegated by this host: /cg/own/cgroup.controllers lists only memory",
        },
        "cpu": {
            "version": "v2",
            "delegated": False,
            "reason": "not delegated by this host: /cg/own/cgroup.controllers lists only memory",
        },
    }
    checked = {
        "per_run_cgroups": True,
        "complete": False,
        "active": ["memory"],
        "reason": "",
        "evidence": {"memory": {"children_killed": -1, "probe_sigkilled": True, "oom_kills": 1}},
    }
    out = proof.controllers_report(checked, given)
    assert out["memory"]["state"] == "active" and "instead" not in out["memory"]
    for name in ("pids", "cpu"):
        assert out[name]["state"] == "not delegated by this host"
        assert "lists only memory" in out[name]["reason"]
    assert "RLIMIT_NPROC" in out["pids"]["instead"] and "RLIMIT_CPU" in out["cpu"]["instead"]


def test_v2_delegation_is_read_from_the_servers_own_cgroup(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("memory\n")
    assert hierarchy.v2_delegated(tmp_path, "memory") == (True, f"{tmp_path}/cgroup.controllers lists it")
    ok, why = hierarchy.v2_delegated(tmp_path, "pids")
    assert not ok and why == f"not delegated by this host: {tmp_path}/cgroup.controllers lists only memory"


MEMORY_ONLY = {
    "per_run_cgroups": True,
    "memory_limit": True,
    "complete": False,
    "active": ["memory"],
    "reason": "memory: active; pids: not delegated by this host (cgroup.controllers lists only memory)",
}
PIDS_ONLY = MEMORY_ONLY | {"active": ["pids"], "memory_limit": False, "reason": "memory: not stopped"}


def test_shared_server_needs_the_memory_limit_not_pids(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_serve.check_sandbox("0.0.0.0", True, "verified", False, MEMORY_ONLY)
    err = capsys.readouterr().err
    assert "hold only memory" in err and "not delegated" in err
    assert not cli_serve.check_sandbox("0.0.0.0", True, "verified", False, PIDS_ONLY)
    assert "memory limit" in capsys.readouterr().err


def test_a_classroom_on_loopback_still_serves_others(capsys: pytest.CaptureFixture[str]) -> None:
    """Behind a reverse proxy a classroom listens on 127.0.0.1 but runs other people's code."""
    assert not cli_serve.check_sandbox("127.0.0.1", False, "no CUDA in bwrap", False, PIDS_ONLY, shared=True)
    assert "Refusing" in capsys.readouterr().err
    assert cli_serve.check_sandbox("127.0.0.1", False, "no CUDA in bwrap", True, PIDS_ONLY, shared=True)
    assert cli_serve.check_sandbox("127.0.0.1", False, "no CUDA in bwrap", False, PIDS_ONLY)  # single user


@needs_cgroups
def test_hardened_runs_are_placed_by_name_without_nspid(
    memory_only: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gVisor's /proc may have no `NSpid` line: the parent then finds a held child by the name it gave itself
    (jail.hold_tag), in the host's /proc. Here `NSpid` exists, so the test takes it away from the parent."""
    monkeypatch.setattr(rungroup, "NSPID", False)
    assert rungroup.names_visible() is True and rungroup.placement_works(hardened=True) is True
    bench = Bench(tmp_path)
    try:
        assert bench.zygote.run_cgroups
        record = bench.run(FORKED_MEMORY)
    finally:
        bench.close()
    run = record.outcome.run
    assert run is not None, record.outcome.error
    assert not run.sandbox_error, run.sandbox_error
    assert run.cgroup_controllers == ("memory",) and "memory" in run.limits_hit, (run.limits_hit, run.output)
    assert record.recovered and not record.leftover
