"""Warm single-use workers (runs/pool.py), forced on the interpreter so CI exercises the GPU's path."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from conftest import FIXTURE_COURSE, LEARNERS, processes_with_argument

from tritonlab.content.course import load_course
from tritonlab.grading.check import pipeline
from tritonlab.runs import pool, runfolder, sandbox
from tritonlab.runs.limits import Limits
from tritonlab.runs.zygote import parent_links


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    os.environ["TRITONLAB_HOME"] = str(tmp_path_factory.mktemp("home"))
    z = sandbox.Zygote("interpreter", pool=2)
    z.wait_ready()
    yield z
    z.close()


def warm_pids(z: sandbox.Zygote, count: int, timeout: float = 10.0) -> set[int]:
    """The zygote's idle children once there are `count` of them (runs in flight excluded)."""
    deadline = time.monotonic() + timeout
    while True:
        busy = {run.pid for run in list(z._runs.values())}
        kids = {p for p, parent in parent_links().items() if parent == z.proc.pid} - busy
        if len(kids) == count or time.monotonic() > deadline:
            return kids
        time.sleep(0.05)


def check(z: sandbox.Zygote, learner: str, timeout: float = 60, on_start=None):  # noqa: ANN001, ANN201
    exercise = load_course(FIXTURE_COURSE).exercise("vector-copy")
    return pipeline.check(
        exercise, LEARNERS / learner, "interpreter", z, seed=3, timeout=timeout, on_start=on_start
    )


def run_program(z: sandbox.Zygote, file: Path, limits: Limits, argv: list[str] | None = None):  # noqa: ANN201
    run_dir = runfolder.new_run_dir()
    (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(file), "argv": argv or []}))
    return z.start(run_dir, limits)


def test_wanted_defaults_and_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITONLAB_POOL", raising=False)
    assert pool.wanted("gpu", hardened=False) == 2  # the check run, and the next one warming meanwhile
    assert pool.wanted("gpu", hardened=False, slots=4) == 5
    assert pool.wanted("interpreter", hardened=False) == 0
    assert pool.wanted("gpu", hardened=True) == 0  # a hardened run isolates itself before CUDA starts
    monkeypatch.setenv("TRITONLAB_POOL", "2")
    assert pool.wanted("interpreter", hardened=False) == 2
    monkeypatch.setenv("TRITONLAB_POOL", "0")
    assert pool.wanted("gpu", hardened=False) == 0
    assert pool.size_from_argv(["gpu", "--isolate", "/x", "--pool", "3"]) == 3


def test_each_worker_serves_one_run_and_the_pool_refills(zygote: sandbox.Zygote) -> None:
    before = warm_pids(zygote, 2)
    assert len(before) == 2
    used = []
    for _ in range(3):
        verdict = check(zygote, "good.py", on_start=lambda run: used.append(run))
        assert verdict.passed, verdict.failures
    pids = [run.pid for run in used]
    assert pids[0] in before  # the first run went to a worker that was already waiting
    assert len(set(pids)) == 3  # single use: every run had a process of its own
    after = warm_pids(zygote, 2)
    assert len(after) == 2 and not after & set(pids)  # refilled; the used ones are gone
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_timeout_and_stop_kill_a_pooled_run(zygote: sandbox.Zygote) -> None:
    started = time.monotonic()
    verdict = check(zygote, "hang.py", timeout=3)
    assert time.monotonic() - started < 15
    assert verdict.failures[0].kind == "timeout"
    run = run_program(zygote, LEARNERS / "hang.py", Limits(wall_seconds=60))
    time.sleep(0.5)
    run.stop()
    result = run.wait()
    assert result.stopped and result.seconds < 15
    assert check(zygote, "good.py").passed  # the pool still serves


def test_setsid_grandchild_of_a_pooled_run_is_killed(zygote: sandbox.Zygote, tmp_path: Path) -> None:
    mark = tmp_path / "grandchild.pid"
    result = run_program(
        zygote, LEARNERS / "setsid_grandchild.py", Limits(wall_seconds=3), [str(mark)]
    ).wait()
    assert result.timed_out
    deadline = time.monotonic() + 5
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mark.exists(), "the grandchild never started"
    for _ in range(50):  # found by its argument: its pid is its own PID namespace's
        if not processes_with_argument(str(mark)):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"grandchild (setsid) survived the run's timeout: {processes_with_argument(str(mark))}")


def test_a_crashed_worker_is_replaced(zygote: sandbox.Zygote) -> None:
    before = warm_pids(zygote, 2)
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 10
    after = before
    while time.monotonic() < deadline:
        after = warm_pids(zygote, 2)
        if victim not in after and len(after) == 2:
            break
        time.sleep(0.05)
    assert victim not in after and len(after) == 2
    verdict = check(zygote, "crash.py")
    assert verdict.failures[0].kind == "crash" and "SIGSEGV" in verdict.failures[0].message
    assert check(zygote, "good.py").passed


def test_service_forces_the_pool_on_the_interpreter(
    home: Path, fixture_course: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tritonlab.service import Service

    monkeypatch.setenv("TRITONLAB_POOL", "1")
    monkeypatch.setenv("TRITONLAB_SANDBOX", "basic")
    service = Service(course_dir=fixture_course, workspace_dir=home / "ws", backend="interpreter")
    try:
        assert service.zygote().pool == 1
        exercise = service.exercise("vector-copy")
        assert service.check(exercise, file=LEARNERS / "good.py", record=False).passed
    finally:
        service.close()


@pytest.mark.gpu
def test_gpu_worker_has_its_cuda_context_before_the_learner_code(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    os.environ["TRITONLAB_HOME"] = str(tmp_path_factory.mktemp("gpu-home"))
    z = sandbox.Zygote("gpu", pool=1)
    try:
        z.wait_ready()
        time.sleep(3)  # let the warm child create its context
        run = run_program(z, LEARNERS / "cuda_state.py", Limits(wall_seconds=60, address_space_bytes=None))
        result = run.wait()
        assert json.loads(result.output.strip().splitlines()[-1])["cuda_initialized_before_learner_code"]
        exercise = load_course(FIXTURE_COURSE).exercise("vector-copy")
        verdict = pipeline.check(exercise, LEARNERS / "good.py", "gpu", z, seed=3)
        assert verdict.passed, verdict.failures
    finally:
        z.close()


@pytest.mark.gpu
def test_a_gpu_runs_context_was_made_with_one_work_queue(tmp_path_factory: pytest.TempPathFactory) -> None:
    """config.cuda_context_env reaches a GPU run (hardened too): its warm child made the CUDA context with
    CUDA_DEVICE_MAX_CONNECTIONS=1 already in its environment, where the driver reads it."""
    os.environ["TRITONLAB_HOME"] = str(tmp_path_factory.mktemp("gpu-queues"))
    program = tmp_path_factory.mktemp("program") / "queues.py"
    program.write_text(
        "import json, os, torch\n"
        "print(json.dumps([os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS'), torch.cuda.is_initialized()]))\n"
    )
    z = sandbox.Zygote("gpu", pool=1)
    try:
        z.wait_ready()
        time.sleep(3)  # let the warm child create its context
        result = run_program(z, program, Limits(wall_seconds=60, address_space_bytes=None)).wait()
        assert json.loads(result.output.strip().splitlines()[-1]) == ["1", True], result.output[-2000:]
    finally:
        z.close()


@pytest.mark.gpu
def test_gpu_pass_has_a_speed_line(home: Path) -> None:
    from tritonlab.service import Service, speed_line

    service = Service(workspace_dir=home / "ws", backend="gpu")
    try:
        exercise = service.exercise("vector-add")
        verdict = service.check(exercise, file=exercise.solution, record=False)
    finally:
        service.close()
    assert verdict.passed and verdict.speed and "error" not in verdict.speed, verdict.speed
    assert verdict.speed["achieved"] > 0 and verdict.speed["vs_reference"] > 0
    assert speed_line(verdict.speed).startswith("speed on vector_add")


def busy_and_idle(zygote: sandbox.Zygote, tmp_path: Path, work: str, idle: str) -> tuple:
    """Run a program that forks a child doing `work` (Python, indented for the child) and waits for it, then
    the program `idle`; both must exit 0. Their results, in that order."""
    busy = tmp_path / "busy_child.py"
    busy.write_text(
        "import os\npid = os.fork()\nif pid == 0:\n" + work + "    os._exit(0)\nos.waitpid(pid, 0)\n"
    )
    quiet = tmp_path / "idle.py"
    quiet.write_text(idle)
    worked = run_program(zygote, busy, Limits(wall_seconds=30)).wait()
    rested = run_program(zygote, quiet, Limits(wall_seconds=30)).wait()
    assert worked.exit_code == 0 and rested.exit_code == 0, (worked.output, rested.output)
    return worked, rested


def test_a_runs_cpu_seconds_count_its_whole_tree(zygote: sandbox.Zygote, tmp_path: Path) -> None:
    """The worker says how much CPU a run's process tree used (the zygote's wait4): a run that spins 0.6 s of
    CPU in a child it waits for reports at least that, and a run that only sleeps reports far less. What a
    check cost in CPU (docs/scale.md) reads this figure; it must include the processes a run started."""
    spin = "    import time\n    end = time.process_time() + 0.6\n    while time.process_time() < end:\n        pass\n"
    spun, slept = busy_and_idle(zygote, tmp_path, spin, "import time\ntime.sleep(0.6)\n")
    assert spun.cpu_s is not None and spun.cpu_s >= 0.55, spun.cpu_s
    assert slept.cpu_s is not None and slept.cpu_s < spun.cpu_s - 0.4, (slept.cpu_s, spun.cpu_s)
    verdict = check(zygote, "good.py")
    assert verdict.passed and verdict.timings["check_cpu_s"] > 0 and verdict.timings["replay_cpu_s"] > 0
    for child in ("check", "replay"):
        assert verdict.timings[f"{child}_faults"] > 0 and verdict.timings[f"{child}_switches"] >= 0, (
            verdict.timings
        )


def test_a_runs_page_faults_count_its_whole_tree(zygote: sandbox.Zygote, tmp_path: Path) -> None:
    """The worker says how many page faults a run's process tree took (the zygote's wait4): a run whose child
    first touches 64 MiB of fresh memory (16384 pages of 4 KiB) reports at least that many more than a run that
    touches none. A check's cost on a busy machine (docs/scale.md) reads this figure beside its CPU seconds."""
    touch = "    import mmap\n    m = mmap.mmap(-1, 64 << 20)\n    for i in range(0, 64 << 20, 4096):\n        m[i] = 1\n"
    touched, quiet = busy_and_idle(zygote, tmp_path, touch, "pass\n")
    assert touched.faults is not None and quiet.faults is not None, (touched.faults, quiet.faults)
    assert touched.faults - quiet.faults >= 16000, (touched.faults, quiet.faults)
    assert touched.switches is not None and touched.switches >= 0, touched.switches


@pytest.mark.gpu
def test_blocking_sync_reaches_the_runs_cuda_context() -> None:
    """By default (and with TRITONLAB_CUDA_SYNC=blocking) a warm child's context, made by pool.init_device,
    waits asleep; `spin` leaves the driver's choice. Read back from the driver in a fresh process."""
    import subprocess
    import sys

    code = (
        "import ctypes\n"
        "from tritonlab.runs import pool\n"
        "pool.init_device('gpu')\n"
        "flags = ctypes.c_uint()\n"
        "assert ctypes.CDLL('libcuda.so.1').cuCtxGetFlags(ctypes.byref(flags)) == 0\n"
        "print(flags.value & pool.CU_CTX_SCHED_MASK)\n"
    )
    asleep = pool.CU_CTX_SCHED_BLOCKING_SYNC
    for mode, want in (("blocking", asleep), ("", asleep), ("spin", None)):
        env = dict(os.environ, TRITONLAB_CUDA_SYNC=mode)
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        got = int(done.stdout.split()[-1])
        assert got == want if want is not None else got != pool.CU_CTX_SCHED_BLOCKING_SYNC, (mode, got)
