"""Runs cannot touch each other's machinery (issue 34), under both layers like every attack (basic and auto).

A hostile test of a class measured it: a run that killed its zygote left a neighbour passing 1 of 18 checks
(17 `crash`), and killing his replay child made his correct code fail as `host-computed`. Here each attack
(learners/parent_killer.py, sibling_killer.py, pid_killer.py) runs beside a neighbour who checks the reference
solution CHECKS times on the same worker; every one of those checks must pass, with no harness death to
retry, and the worker must survive. The attacks are bounded (see each file) so that a broken sandbox takes
down only this test. Then the harness's own deaths: a replay child or the worker killed from outside (here by
the test itself) makes the check graded again and passing, never `crash` or `host-computed` blamed on the
code; when the retry dies too, the verdict is `worker-lost` and nothing is recorded.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import MODES, Bench, Case, bench_in_mode, failed_with  # noqa: E402

from tritonlab.runs import runfolder, sandbox  # noqa: E402
from tritonlab.runs.cgroups import rungroup  # noqa: E402
from tritonlab.runs.collect import RunResult  # noqa: E402
from tritonlab.runs.limits import Limits  # noqa: E402

ATTACKS = ("parent_killer.py", "sibling_killer.py", "pid_killer.py")
CHECKS = 3
ATTACK_SECONDS = 150  # an upper bound: the test tells the attack to stop once the neighbour is done
STOP_FILE = "stop"  # written into the attack's run directory: it prints what it did and ends


@pytest.fixture(scope="module", params=MODES)
def bench(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    if request.param == "auto" and not shutil.which("bwrap"):
        pytest.skip("TRITONLAB_SANDBOX=auto: bubblewrap (bwrap) is not installed; `make system-deps`")
    yield from bench_in_mode(request.param, tmp_path_factory.mktemp(f"neighbours-{request.param}"))


def start_attack(bench: Bench, attack: str) -> tuple[sandbox.Run, Path]:
    """The attack as a program run on the bench's worker, looping until STOP_FILE appears in its directory."""
    file = bench.materialize(Case(attack, attack, "", failed_with(), "run"))
    run_dir = runfolder.new_run_dir()
    (run_dir / "job.json").write_text(
        json.dumps({"mode": "run", "file": str(file), "argv": [str(ATTACK_SECONDS)]})
    )
    limits = Limits(wall_seconds=ATTACK_SECONDS + 30, cpu_seconds=ATTACK_SECONDS + 30)
    return bench.service.zygote().start(run_dir, limits), run_dir


def stop_attack(handle: sandbox.Run, run_dir: Path) -> RunResult:
    (run_dir / STOP_FILE).write_text("")  # the attack's own folder: it sees the file, whoever owns it
    waiter = threading.Timer(20, handle.stop)  # it looks for the file every 50 ms; never wait forever
    waiter.start()
    try:
        return handle.wait()
    finally:
        waiter.cancel()
        runfolder.remove_run_dir(run_dir)


def summary(verdicts: list) -> list[str]:
    return [f"{f.kind}: {f.message}" for v in verdicts for f in v.failures]


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.removesuffix(".py") for a in ATTACKS])
def test_a_neighbour_passes_every_check_while_a_run_attacks(bench: Bench, attack: str) -> None:
    zygote = bench.service.zygote()
    zygote.wait_ready()
    handle, run_dir = start_attack(bench, attack)
    verdicts = []
    try:
        time.sleep(1.5)  # the attack is in its loop before the neighbour's first check starts
        for _ in range(CHECKS):
            verdicts.append(
                bench.service.check(bench.exercise, file=bench.exercise.solution, record=False, timeout=60)
            )
        overlapped = handle.status is None  # still attacking when the neighbour's last check ended
    finally:
        result = stop_attack(handle, run_dir)
    assert all(v.passed for v in verdicts), (summary(verdicts), result.output[-2000:])
    # Passed on the first attempt: no harness death to retry (a retry would mean the attack reached something)
    retried = [v.notes for v in verdicts if "harness_retries" in v.timings]
    assert not retried, (retried, result.output[-2000:])
    assert bench.service.zygote() is zygote and zygote.proc.poll() is None, "the worker did not survive"
    assert overlapped, f"the attack ended before the neighbour's checks did:\n{result.output[-2000:]}"
    assert "refused:" in result.output, f"the attack did not run its loop:\n{result.output[-2000:]}"


# ---- the harness's own deaths, from outside: retried, never blamed on the code ------------------------------


class KillFromOutside:
    """Wraps the worker's `start`: the first `times` runs of job mode `mode` are killed with SIGKILL from
    outside (this test process, as an attacker or the kernel's OOM killer would) as soon as the worker said
    their pid; `target` "run" kills the run's own process, "worker" the worker itself."""

    def __init__(self, zygote: sandbox.Zygote, mode: str, times: int, target: str = "run") -> None:
        self.zygote, self.mode, self.times, self.target = zygote, mode, times, target
        self.killed: list[int] = []
        self.original = zygote.start

    def __enter__(self) -> KillFromOutside:
        self.zygote.start = self.start  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        self.zygote.start = self.original  # type: ignore[method-assign]

    def start(self, run_dir: Path, limits: Limits) -> sandbox.Run:
        mode = json.loads((run_dir / "job.json").read_text()).get("mode")
        run = self.original(run_dir, limits)
        if mode == self.mode and len(self.killed) < self.times:
            self.killed.append(0)
            threading.Thread(target=self._kill, args=(run, len(self.killed) - 1), daemon=True).start()
        return run

    def _host_pid(self, inner: int) -> int | None:
        if not self.zygote.hardened:
            return inner  # layer 1: the worker's namespace is this machine's
        return rungroup.host_pid(inner, self.zygote.proc.pid, level=self.zygote.pid_level())

    def _kill(self, run: sandbox.Run, index: int) -> None:
        deadline = time.monotonic() + 10
        while run.pid is None and time.monotonic() < deadline:
            time.sleep(0.002)
        inner = int(self.zygote.info["pid"]) if self.target == "worker" else run.pid
        host = self._host_pid(int(inner or 0)) if inner else None
        if host:
            try:
                os.kill(host, signal.SIGKILL)
                self.killed[index] = host
            except ProcessLookupError:
                self.killed[index] = -1  # it had ended already: this one was not killed


def check_solution(bench: Bench, record: bool = False):  # noqa: ANN201
    return bench.service.check(bench.exercise, file=bench.exercise.solution, record=record, timeout=60)


def test_a_replay_child_killed_from_outside_is_retried_and_passes(bench: Bench) -> None:
    zygote = bench.service.zygote()
    with KillFromOutside(zygote, "replay", times=1) as killer:
        verdict = check_solution(bench)
    assert killer.killed and killer.killed[0], "the replay child was never killed: nothing was tested"
    assert verdict.passed, summary([verdict])
    assert verdict.timings.get("harness_retries") == 1
    assert any("checked twice" in note and "not your code" in note for note in verdict.notes), verdict.notes


def test_a_harness_that_dies_under_the_retry_too_is_worker_lost_and_not_recorded(bench: Bench) -> None:
    zygote = bench.service.zygote()
    before = len(bench.service.store.attempts(bench.exercise.id))
    with KillFromOutside(zygote, "replay", times=2) as killer:
        verdict = check_solution(bench, record=True)
    assert len([pid for pid in killer.killed if pid]) == 2, (
        killer.killed,
        summary([verdict]),
        verdict.notes,
        verdict.timings,
    )
    assert not verdict.passed
    assert [f.kind for f in verdict.failures] == ["worker-lost"], summary([verdict])
    assert "not your code" in verdict.failures[0].cause
    assert len(bench.service.store.attempts(bench.exercise.id)) == before, (
        "a check nobody graded was recorded"
    )


def test_a_worker_killed_under_a_check_is_retried_on_a_new_one(bench: Bench) -> None:
    zygote = bench.service.zygote()
    zygote.wait_ready()
    with KillFromOutside(zygote, "check", times=1, target="worker") as killer:
        verdict = check_solution(bench)
    assert killer.killed and killer.killed[0], "the worker was never killed: nothing was tested"
    assert zygote.dead and bench.service.zygote() is not zygote, "the worker was not replaced"
    assert verdict.passed, summary([verdict])
    assert verdict.timings.get("harness_retries") == 1


def test_a_held_child_killed_before_its_release_leaves_the_worker_alive(bench: Bench) -> None:
    """A held run (waiting to be placed in its cgroup) killed from outside before the worker releases it: the
    worker's release hits a closed pipe, which once killed the worker (BrokenPipeError out of its loop) and,
    with it, every run in flight. Here the replay child is killed at that moment, every time: the check is
    graded again (its retry killed the same way would be worker-lost, so only the first is) and the worker
    lives on."""
    zygote = bench.service.zygote()
    zygote.wait_ready()
    if not zygote.run_cgroups:
        pytest.skip("runs are not held on this machine (no per-run cgroups): there is no release to race")
    runs: dict[str, sandbox.Run] = {}
    killed: list[int] = []
    start, send = zygote.start, zygote.send

    def watched_start(run_dir: Path, limits: Limits) -> sandbox.Run:
        run = start(run_dir, limits)
        if json.loads((run_dir / "job.json").read_text()).get("mode") == "replay":
            runs[run.id] = run
        return run

    def kill_then_send(msg: dict) -> None:
        run = runs.get(msg.get("id", "")) if msg.get("op") == "go" else None
        if run is not None and not killed:
            host = run.pid  # layer 1: the worker's namespace is this machine's
            if zygote.hardened:
                host = rungroup.host_pid(int(run.pid), zygote.proc.pid, level=zygote.pid_level())
            os.kill(int(host), signal.SIGKILL)
            killed.append(int(host))
            deadline = time.monotonic() + 10
            # gone, or a zombie the worker has not reaped yet: either way its end of the pipe is closed
            while time.monotonic() < deadline and not gone_or_zombie(int(host)):
                time.sleep(0.005)
        send(msg)

    zygote.start, zygote.send = watched_start, kill_then_send  # type: ignore[method-assign]
    try:
        verdict = check_solution(bench)
    finally:
        zygote.start, zygote.send = start, send  # type: ignore[method-assign]
    assert killed, "no replay child was held: nothing was tested"
    assert zygote.proc.poll() is None and not zygote.dead, "the worker died when it released a dead child"
    assert bench.service.zygote() is zygote
    assert verdict.passed, summary([verdict])
    assert verdict.timings.get("harness_retries") == 1, verdict.notes


def gone_or_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True
