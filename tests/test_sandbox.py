"""The runner's limits through a real zygote and real children: timeout, crash, output cap, env, process tree."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from conftest import FIXTURE_COURSE, LEARNERS, processes_with_argument

from tritonlab import config
from tritonlab.content.course import load_course
from tritonlab.grading.check import pipeline
from tritonlab.runs import runfolder, sandbox
from tritonlab.runs.limits import Limits, child_environment


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    os.environ["TRITONLAB_HOME"] = str(tmp_path_factory.mktemp("home"))
    z = sandbox.Zygote("interpreter")
    z.wait_ready()
    yield z
    z.close()


def run_program(zygote: sandbox.Zygote, file: Path, limits: Limits, argv: list[str] | None = None):  # noqa: ANN201
    run_dir = runfolder.new_run_dir()
    (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(file), "argv": argv or []}))
    return zygote.start(run_dir, limits).wait()


def check(zygote: sandbox.Zygote, learner: str, timeout: float = 60):  # noqa: ANN201
    exercise = load_course(FIXTURE_COURSE).exercise("vector-copy")
    return pipeline.check(exercise, LEARNERS / learner, "interpreter", zygote, seed=3, timeout=timeout)


def test_zygote_is_warm_and_interpreted(zygote: sandbox.Zygote) -> None:
    assert zygote.info["backend"] == "interpreter" and zygote.info["subreaper"] is True


def test_environment_is_allowlisted(zygote: sandbox.Zygote, monkeypatch: pytest.MonkeyPatch) -> None:
    # The zygote was started before these were set, so check the allowlist function and the live child.
    monkeypatch.setenv("TRITONLAB_TOKEN", "secret-token")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "nope")
    env = child_environment("interpreter")
    assert "TRITONLAB_TOKEN" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert env["TRITON_INTERPRET"] == "1"
    result = run_program(zygote, LEARNERS / "show_env.py", Limits(wall_seconds=30))
    child_env = json.loads(result.output)
    assert child_env["TRITON_INTERPRET"] == "1"
    assert not any("TOKEN" in k or "SECRET" in k for k in child_env)
    # Idle CPU thread pools sleep at once in every run (config.thread_wait_env) unless the host set otherwise.
    for key, value in config.THREAD_WAIT_DEFAULTS.items():
        assert child_env[key] == os.environ.get(key, value)


def test_timeout_kills_a_hang(zygote: sandbox.Zygote) -> None:
    started = time.monotonic()
    verdict = check(zygote, "hang.py", timeout=3)
    assert time.monotonic() - started < 15
    assert not verdict.passed and verdict.failures[0].kind == "timeout"


def test_crash_by_signal_is_reported(zygote: sandbox.Zygote) -> None:
    verdict = check(zygote, "crash.py")
    assert verdict.failures[0].kind == "crash" and "SIGSEGV" in verdict.failures[0].message


def test_huge_output_is_capped(zygote: sandbox.Zygote) -> None:
    limits = Limits(wall_seconds=30, output_bytes=50_000)
    result = run_program(zygote, LEARNERS / "spam.py", limits)
    assert result.output_truncated and len(result.output) <= 50_000
    assert result.seconds < 20


def test_setsid_grandchild_is_killed(zygote: sandbox.Zygote, tmp_path: Path) -> None:
    mark = tmp_path / "grandchild.pid"
    result = run_program(zygote, LEARNERS / "setsid_grandchild.py", Limits(wall_seconds=3), [str(mark)])
    assert result.timed_out
    deadline = time.monotonic() + 5
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mark.exists(), "the grandchild never started"
    for _ in range(50):
        if not processes_with_argument(str(mark)):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"grandchild (setsid) survived the run's timeout: {processes_with_argument(str(mark))}")


def test_run_dir_removed_and_symlinks_not_followed(tmp_path: Path) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "link").symlink_to(tmp_path)
    runfolder.remove_run_dir(run_dir)
    assert not run_dir.exists() and precious.read_text() == "keep me"
