"""The GPU memory line (runs/gpu_memory.py): a run whose processes hold more GPU memory than their line, by the
driver's count, is ended with a verdict that says so; the memory of processes outside its tree is not its own.

Without a GPU the driver's count is not there: these tests give the watch a count of their own, naming real
processes (the run's, its children, the worker's warm children), so the attribution through /proc, the run's
end through its worker and the verdict are the real ones. The count read from the driver itself (NVML) is the
GPU test's: tests/adversarial/test_gpu_runs.py::test_gpu_memory_taken_around_torch_is_ended_at_the_line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonlab.grading.check.failures import process_failure
from tritonlab.runs import gpu_memory, runfolder, sandbox
from tritonlab.runs.limits import Limits
from tritonlab.runs.zygote import descendants, parent_links

GIB = 1 << 30


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    os.environ["TRITONLAB_HOME"] = str(tmp_path_factory.mktemp("home"))
    z = sandbox.Zygote("interpreter")
    z.wait_ready()
    yield z
    z.close()


@pytest.fixture
def count() -> Iterator[dict]:
    """What the watch reads: `per_process` bytes for every process below `below` that has no child of its own
    (below the worker: its warm children and each run's own process, under the run's waiter and init), as the
    driver would count a context in each."""
    state: dict = {"below": 0, "per_process": 0, "after": None}

    def usage() -> dict[int, int]:
        if not state["below"] or (state["after"] is not None and not state["after"]()):
            return {}
        parents = set(parent_links().values())
        return {pid: state["per_process"] for pid in descendants(state["below"]) if pid not in parents}

    previous = gpu_memory.install(gpu_memory.Watch(usage, poll_s=0.05))
    yield state
    gpu_memory.install(previous)


def sleeper(tmp_path: Path, seconds: float) -> Path:
    file = tmp_path / "sleeper.py"
    file.write_text(
        "import os, time\n"
        "open('started.mark', 'w').close()  # in its run folder: the learner's code runs from here on\n"
        f"print('started', flush=True)\ntime.sleep({seconds})\nprint('done')\n"
    )
    return file


def start(zygote: sandbox.Zygote, file: Path, cap: int | None):  # noqa: ANN201
    run_dir = runfolder.new_run_dir()
    (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(file), "argv": []}))
    return zygote.start(run_dir, Limits(wall_seconds=30, gpu_memory_bytes=cap))


def test_tree_usage_counts_a_process_and_those_below_it_only() -> None:
    script = "import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); print(c.pid, flush=True); time.sleep(30)"
    top = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        child = int(top.stdout.readline())  # type: ignore[union-attr]
        usage = {top.pid: 1 * GIB, child: 2 * GIB, os.getpid(): 5 * GIB}
        parents = parent_links()
        assert gpu_memory.tree_usage(top.pid, usage, parents) == 3 * GIB
        assert gpu_memory.tree_usage(child, usage, parents) == 2 * GIB
        assert gpu_memory.tree_usage(os.getpid(), usage, parents) == 8 * GIB  # the test's own tree holds both
    finally:
        top.kill()
        top.wait()


def test_a_run_past_its_line_is_ended_and_its_verdict_says_so(
    zygote: sandbox.Zygote, count: dict, tmp_path: Path
) -> None:
    count.update(below=zygote.proc.pid, per_process=4 * GIB)  # 4 GiB against a line of 1 + 2 GiB
    started = time.monotonic()
    run = start(zygote, sleeper(tmp_path, 25), cap=GIB)
    count["after"] = (run.run_dir / "started.mark").exists  # as a context made by the learner's code
    result = run.wait()
    assert time.monotonic() - started < 15, result
    assert "GPU memory" in result.limits_hit and result.signal is not None, result
    assert not result.stopped and not result.timed_out  # ended by the line, not by Stop or the clock
    assert result.gpu_memory_bytes is not None and result.gpu_memory_bytes >= 4 * GIB
    assert result.gpu_memory_line == GIB + gpu_memory.LINE_EXTRA
    failure = process_failure("case", result)
    assert failure.kind == "crash"
    assert "GPU memory" in failure.message and "3.0 GiB" in failure.message, failure.message
    assert f"{result.gpu_memory_bytes / GIB:.1f} GiB" in failure.message


def test_a_run_under_its_line_runs_to_its_end(zygote: sandbox.Zygote, count: dict, tmp_path: Path) -> None:
    count.update(below=zygote.proc.pid, per_process=2 * GIB)  # under 1 + 2 GiB
    result = start(zygote, sleeper(tmp_path, 1.0), cap=GIB).wait()
    assert result.exit_code == 0 and "done" in result.output, result
    assert not result.limits_hit
    assert result.gpu_memory_bytes == 2 * GIB  # seen: the run's own process


def test_memory_outside_the_runs_tree_is_not_its_own(
    zygote: sandbox.Zygote, count: dict, tmp_path: Path
) -> None:
    # Every process below the server but outside the worker holds far past the line: the run is not ended.
    count.update(below=os.getpid(), per_process=0)
    outside = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:

        def usage() -> dict[int, int]:
            return {outside.pid: 100 * GIB}

        gpu_memory.install(gpu_memory.Watch(usage, poll_s=0.05))
        result = start(zygote, sleeper(tmp_path, 1.0), cap=GIB).wait()
    finally:
        outside.kill()
        outside.wait()
    assert result.exit_code == 0 and not result.limits_hit, result
    assert result.gpu_memory_bytes == 0


def test_a_run_without_a_gpu_cap_is_not_watched(zygote: sandbox.Zygote, count: dict, tmp_path: Path) -> None:
    count.update(below=zygote.proc.pid, per_process=100 * GIB)
    result = start(zygote, sleeper(tmp_path, 0.5), cap=None).wait()
    assert result.exit_code == 0 and not result.limits_hit and result.gpu_memory_bytes is None, result


def test_the_line_can_be_turned_off_and_its_reading_interval_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from tritonlab import config

    previous = gpu_memory.install(None)
    try:
        monkeypatch.setenv("TRITONLAB_GPU_MEMORY_LINE", "off")
        assert config.gpu_memory_line() is None and gpu_memory.watch() is None
        assert gpu_memory.probe() == {
            "held": False,
            "reason": "TRITONLAB_GPU_MEMORY_LINE is off",
            "line_extra_bytes": gpu_memory.LINE_EXTRA,
        }
        for value, seconds in (("0.25", 0.25), ("2", 2.0), ("0", 0.5), ("11", 0.5), ("soon", 0.5), ("", 0.5)):
            monkeypatch.setenv("TRITONLAB_GPU_MEMORY_LINE", value)
            assert config.gpu_memory_line() == seconds, value
    finally:
        gpu_memory.install(previous)


def test_parents_are_read_only_for_the_processes_asked_about() -> None:
    parents = gpu_memory.Parents()
    assert parents.get(os.getpid()) == os.getppid()
    assert parents.get(1 << 30) == 0  # no such process
    assert set(parents) == {os.getpid(), 1 << 30}


def test_an_out_of_memory_within_the_cap_says_the_gpu_was_full_not_the_code() -> None:
    """torch's refusal of a GPU allocation says which limit it was: past this run's cap (the learner's code), or
    within it, when other runs held the GPU's memory (an attacker the line ends half a second later, or a full
    class): then the verdict must not blame the learner's code."""
    from tritonlab.grading.harness import out_of_memory_hint

    cap = 4 * GIB  # this process holds nothing in torch's allocator (no CUDA here)
    full = out_of_memory_hint("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has 79 GiB ...", cap)
    assert "GPU itself had no memory left" in full and "2.0 GiB" in full and "4.0 GiB" in full, full
    over = out_of_memory_hint("CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has 79 GiB ...", cap)
    assert "went over its GPU memory cap (4.0 GiB" in over, over
    assert "went over" in out_of_memory_hint("CUDA out of memory.", cap)  # no figure: the cap's hint
    assert "GPU itself" in out_of_memory_hint("Tried to allocate 512.00 MiB.", cap)


def test_a_run_beside_one_the_line_ended_is_told_so(
    zygote: sandbox.Zygote, count: dict, tmp_path: Path
) -> None:
    """`gpu_neighbour_ended`: the line ended another run while this one ran (what lets a check whose GPU
    allocation was refused then be graded again); never for the run it ended itself, nor for one that ran alone."""
    count.update(below=zygote.proc.pid, per_process=4 * GIB)
    (tmp_path / "b").mkdir()
    beside = start(zygote, sleeper(tmp_path / "b", 3.0), cap=None)
    hog = start(zygote, sleeper(tmp_path, 25), cap=GIB)
    count["after"] = (hog.run_dir / "started.mark").exists
    ended = hog.wait()
    near = beside.wait()
    assert "GPU memory" in ended.limits_hit and not ended.gpu_neighbour_ended, ended
    assert near.exit_code == 0 and near.gpu_neighbour_ended and not near.limits_hit, near
    count["per_process"] = 0
    alone = start(zygote, sleeper(tmp_path / "b", 0.2), cap=None).wait()
    assert alone.exit_code == 0 and not alone.gpu_neighbour_ended, alone


def test_the_watch_counts_the_runs_it_ended_in_a_window() -> None:
    watch = gpu_memory.Watch(lambda: {}, poll_s=0.05)
    now = time.monotonic()
    watch.ended.extend([now - 10, now - 1, now])
    assert watch.ended_between(now - 2, now) == 2 and watch.ended_between(now - 20, now - 5) == 1
    assert watch.ended_between(now + 1, now + 2) == 0


REFUSED = """import time

import torch

calls = []


def vector_copy(x):
    calls.append(1)
    if len(calls) == 1:
        time.sleep(1.5)  # the other run is ended by the line meanwhile (when there is one)
    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB.")
"""


def test_a_check_refused_gpu_memory_while_the_line_ended_another_run_is_graded_again(
    count: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the service: a check whose child saw a GPU allocation refused while the line ended another run
    (which held past its line) is graded once more (`harness_retries`, the verdict's note); the same check with
    no run ended beside it is graded once: the child's report alone never buys a second attempt."""
    from conftest import FIXTURE_COURSE

    from tritonlab.content.course import load_course
    from tritonlab.service import Service

    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    service = Service(course_dir=FIXTURE_COURSE, workspace_dir=tmp_path / "ws", backend="interpreter")
    exercise = load_course(FIXTURE_COURSE).exercise("vector-copy")
    learner = tmp_path / "refused.py"
    learner.write_text(REFUSED)
    try:
        worker = service.zygote()
        count.update(below=worker.proc.pid, per_process=4 * GIB)
        hog = start(worker, sleeper(tmp_path, 25), cap=GIB)  # ended by the line once its code began
        count["after"] = (hog.run_dir / "started.mark").exists
        ended: list = []
        waiting = threading.Thread(target=lambda: ended.append(hog.wait()))  # as its owner waits on it
        waiting.start()
        verdict = service.check(exercise, file=learner, record=False, speed=False, timeout=60)
        waiting.join(30)
        assert ended and "GPU memory" in ended[0].limits_hit
        assert not verdict.passed and verdict.timings.get("harness_retries") == 1, verdict.timings
        assert any("GPU memory line ended another run" in note for note in verdict.notes), verdict.notes
        assert any("OutOfMemoryError" in f.message for f in verdict.failures), verdict.failures

        count["after"] = None
        count["per_process"] = 0  # nothing past a line: no run is ended beside the check
        alone = service.check(exercise, file=learner, record=False, speed=False, timeout=60)
        assert not alone.passed and "harness_retries" not in alone.timings, alone.timings
    finally:
        service.close()
