"""The per-user background worker one-shot CLI commands reuse (runs/daemon.py), forced on the interpreter."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
from conftest import FIXTURE_COURSE, LEARNERS, cli

from tritonlab.content.course import load_course
from tritonlab.grading import grader
from tritonlab.runs import daemon, sandbox
from tritonlab.service import Service


@pytest.fixture
def forced(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRITONLAB_DAEMON", "1")
    monkeypatch.setenv("TRITONLAB_POOL", "1")
    monkeypatch.setenv("TRITONLAB_SANDBOX", "basic")
    monkeypatch.setenv("TRITONLAB_DAEMON_IDLE", "3")
    return home


def gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def wait_until(predicate, seconds: float = 15.0) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_wanted_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITONLAB_DAEMON", raising=False)
    assert daemon.wanted("gpu", hardened=False) and not daemon.wanted("interpreter", hardened=False)
    assert not daemon.wanted("gpu", hardened=True)
    monkeypatch.setenv("TRITONLAB_DAEMON", "0")
    assert not daemon.wanted("gpu", hardened=False)


def test_two_commands_share_one_daemon_that_stops_when_idle(
    forced: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "TRITONLAB_DAEMON_IDLE", "10"
    )  # outlives the gap between the two commands on a busy CI
    pids, paths = [], []
    for _ in range(2):
        service = Service(course_dir=FIXTURE_COURSE, workspace_dir=forced / "ws", backend="interpreter")
        service.use_daemon = True
        try:
            z = service.zygote()
            assert isinstance(z, daemon.RemoteZygote)
            verdict = service.check(service.exercise("vector-copy"), file=LEARNERS / "good.py", record=False)
            assert verdict.passed, verdict.failures
            pids.append(z.info["pid"])
            paths.append(z.socket_path)
        finally:
            service.close()
    assert pids[0] == pids[1]  # the second command found the first one's warm zygote
    path = paths[0]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert gone(pids[0], 40) and wait_until(lambda: not path.exists())  # idle: daemon and zygote end


def test_timeout_and_a_vanished_client_kill_the_run(forced: Path) -> None:
    z = daemon.connect("interpreter", 1)
    try:
        z.wait_ready()
        exercise = load_course(FIXTURE_COURSE).exercise("vector-copy")
        verdict = grader.check(exercise, LEARNERS / "hang.py", "interpreter", z, seed=3, timeout=3)
        assert verdict.failures[0].kind == "timeout"
        run_dir = sandbox.new_run_dir()
        job = {"mode": "run", "file": str(LEARNERS / "hang.py"), "argv": []}
        (run_dir / "job.json").write_text(json.dumps(job))
        run = z.start(run_dir, sandbox.Limits(wall_seconds=60))
        assert wait_until(lambda: run.pid is not None)
    finally:
        z.close()  # like a CLI killed mid-run: the daemon kills what it started
    assert gone(run.pid)


def test_the_cli_check_uses_the_daemon(forced: Path) -> None:
    env = {"TRITONLAB_COURSE": str(FIXTURE_COURSE), "TRITONLAB_BACKEND": "interpreter"}
    first = cli("check", "vector-copy", "--solution", "--json", env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["passed"]
    socks = list((forced / "daemon").glob("*.sock"))
    assert len(socks) == 1
    second = cli("check", "vector-copy", "--solution", "--json", env=env)
    assert second.returncode == 0 and json.loads(second.stdout)["passed"]
    assert wait_until(lambda: not socks[0].exists(), 20)


def test_a_daemon_that_cannot_start_fails_fast(forced: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon, "key", lambda backend, pool: "broken")
    monkeypatch.setattr(daemon.sys, "executable", "/bin/false")
    started = time.monotonic()
    with pytest.raises(sandbox.SandboxError):
        daemon.connect("interpreter", 1)
    assert time.monotonic() - started < 5
