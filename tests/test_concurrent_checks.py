"""Several checks at once through one service, each still in its own sandbox (issue 37): a class's eight learners
check at the same moment on a service with eight slots (TRITONLAB_SLOTS=8) under the hardened sandbox with
per-run cgroups, and all eight are seen alive together — each in a run folder, an IPC namespace and a cgroup of
its own — while one learner's second submission waits for their first (service/gate.py: one slot per learner)
without holding up the others.

How it is seen: each learner file, at import (inside its check child), prints its IPC namespace and then waits
until a file `go` appears in its own run folder (the test writes it from outside, as tests/adversarial's
attacks are stopped). So the runs hold their slots until the test has looked at all of them: eight children
waiting at once is proof that eight ran at once, whatever the machine's load. The test reads each run's folder
and cgroup from outside (the sandbox's `Run` handle) and checks that the cgroup holds a process at that moment.
Skipped, with the reason, where the hardened sandbox or per-run cgroups are not available."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_web_api import make_course

from tritonlab.classroom.room import Classroom
from tritonlab.runs import hardening
from tritonlab.service import Service
from tritonlab.web import create_app

ROOT = Path(__file__).resolve().parent.parent
GOOD = (ROOT / "tests" / "fixtures" / "learners" / "good.py").read_text()
SLOTS = 8
LEARNERS = [f"learner{i}" for i in range(SLOTS)]  # learner0 submits twice
WAIT_S = 240.0

# At import, in the check child: say which IPC namespace it is in, then hold its slot until the test says go
# (at most 90 s, so that a broken test cannot leave runs behind). The kernel below it is a right answer.
HOLD = """
import os, time
print("IPC-NS", os.readlink("/proc/self/ns/ipc"), flush=True)
for _ in range(900):
    if os.path.exists("go"):
        break
    time.sleep(0.1)
"""


@pytest.fixture(params=["interpreter", pytest.param("gpu", marks=pytest.mark.gpu)])
def classroom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[dict]:
    """A class of eight learners over one service with SLOTS slots; on the interpreter (CI) and on a GPU."""
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRITONLAB_BACKEND", request.param)
    monkeypatch.setenv("TRITONLAB_SLOTS", str(SLOTS))
    hardened, why = hardening.decide(request.param)
    if not hardened:
        print(f"SKIP: needs the hardened sandbox (layer 2): {why}")
        pytest.skip(f"needs the hardened sandbox (layer 2): {why}")
    service = Service(course_dir=make_course(tmp_path), workspace_dir=tmp_path / "ws", lang="en")
    assert service.backend == request.param
    room = Classroom(f"sqlite:///{tmp_path / 'home' / 'classroom.db'}", adopt=Path("/nonexistent"))
    room.init("Concurrency")
    users = {name: room.add(name)[0] for name in LEARNERS}
    create_app(service, "unused-token-0123456789", classroom=room)  # what `serve --classroom` builds
    try:
        zygote = service.zygote()
        zygote.wait_ready()
        if not zygote.hardened or not zygote.run_cgroups:
            reason = (
                "the worker places runs in no per-run cgroup" if zygote.hardened else service.hardened_reason
            )
            print(f"SKIP: needs the hardened sandbox with per-run cgroups: {reason}")
            pytest.skip(f"needs the hardened sandbox with per-run cgroups: {reason}")
        yield {"service": service, "room": room, "users": users}
    finally:
        service.close()
        room.close()


class Submission:
    """One learner's check on its own thread: its run (from on_start), what it printed, when it ran."""

    def __init__(self, service: Service, name: str, after: Submission | None = None) -> None:
        self.name, self.service, self.after = name, service, after
        self.run = None
        self.overlapped: bool | None = None  # started while `after`'s run was still alive
        self.output: list[str] = []
        self.verdict = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._check, name=f"check-{name}", daemon=True)

    def _check(self) -> None:
        exercise = self.service.exercise("vector-copy")
        try:
            self.verdict = self.service.check(
                exercise,
                text=HOLD + GOOD,
                record=False,
                speed=False,
                timeout=180,
                on_start=self._started,
                on_output=self.output.append,
            )
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def _started(self, run) -> None:  # noqa: ANN001
        if self.after is not None:
            self.overlapped = self.after.run is None or self.after.run.status is None
        self.run = run

    @property
    def namespace(self) -> str:
        found = re.search(r"IPC-NS (ipc:\[\d+\])", "".join(self.output))
        return found.group(1) if found else ""

    def go(self) -> None:
        with contextlib.suppress(FileNotFoundError):  # the run ended and its folder is gone
            (Path(self.run.run_dir) / "go").write_text("")


def until(condition, what: str, seconds: float = WAIT_S) -> None:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def cgroup_holds_a_process(run) -> bool:  # noqa: ANN001
    return any((folder / "cgroup.procs").read_text().split() for _v, folder, _c in run.group.folders)


def test_eight_checks_at_once_each_isolated_and_one_slot_per_learner(classroom: dict) -> None:
    service, room, users = classroom["service"], classroom["room"], classroom["users"]
    assert service.gate().size == SLOTS
    learner = {name: room.learner_service(service, users[name]) for name in LEARNERS}
    first = Submission(learner[LEARNERS[0]], "learner0-first")
    second = Submission(learner[LEARNERS[0]], "learner0-second", after=first)
    others = [Submission(learner[name], name) for name in LEARNERS[1:]]
    held: list[Submission] = []
    try:
        first.thread.start()
        until(lambda: service.gate().active == 1, "the first check holds a slot")
        second.thread.start()  # the same learner again, while seven slots are free
        until(lambda: service.gate().waiting + service.gate().active == 2, "the second check is queued")
        time.sleep(0.5)
        assert service.gate().waiting == 1, "the learner's second check took a second slot"
        for sub in others:
            sub.thread.start()
        everyone = [first, second, *others]
        # the barrier: eight check children alive at once, each waiting for its `go`
        until(lambda: len([s for s in everyone if s.namespace]) >= SLOTS, f"{SLOTS} checks run at once")
        time.sleep(1.0)  # a run wrongly admitted beside them has time to show up
        held = [s for s in everyone if s.namespace]
        assert second not in held and second.run is None, "one learner's two checks ran at once"
        assert sorted(s.name for s in held) == sorted([first.name] + [s.name for s in others])
        assert service.gate().active == SLOTS and service.gate().waiting == 1
        # isolation, seen while all eight are alive: folder, IPC namespace and cgroup each its own
        assert len({str(s.run.run_dir) for s in held}) == SLOTS, [str(s.run.run_dir) for s in held]
        assert len({s.namespace for s in held}) == SLOTS, [s.namespace for s in held]
        assert all(s.run.group is not None for s in held), "a run has no cgroup of its own"
        assert len({s.run.group.name for s in held}) == SLOTS
        assert all(cgroup_holds_a_process(s.run) for s in held), "a run's cgroup holds none of its processes"
        for sub in held:
            sub.go()
        until(lambda: second.run is not None, "the second check starts once the first one ended")
        second.go()
        for sub in everyone:
            sub.thread.join(WAIT_S)
    finally:  # never leave a run waiting for its go
        for sub in [first, second, *others]:
            if sub.run is not None:
                sub.go()
    failed = [s for s in everyone if s.verdict is None or not s.verdict.passed]
    assert not failed, {s.name: s.error or [f.message for f in s.verdict.failures] for s in failed}
    assert second.overlapped is False, "the learner's second check started while the first one ran"
    assert second.namespace  # it ran (a namespace's number may be reused once the eight have ended)


class GateLog:
    """Every slot the service's queue granted: (exclusive, admitted at, released at). It wraps the real gate's
    acquire and release (the queue itself decides; this only writes down what it did)."""

    def __init__(self, gate) -> None:  # noqa: ANN001
        self.slots: list[tuple[bool, float, float]] = []
        self.acquire, self.release = gate.acquire, gate.release
        gate.acquire, gate.release = self._acquire, self._release

    def _acquire(self, on_wait=None, **how):  # noqa: ANN001, ANN003, ANN202 - owner, exclusive, idle_wait
        ticket = self.acquire(on_wait, **how)
        ticket.at = time.monotonic()
        return ticket

    def _release(self, ticket=None) -> None:  # noqa: ANN001
        self.slots.append((ticket.exclusive, ticket.at, time.monotonic()))
        self.release(ticket)


def timed_checks_at_once(tmp_path: Path, backend: str, learners: int = 4) -> tuple[dict, GateLog]:
    """`learners` learners of a class over the real course check vector-add's reference solution at once, each
    timed (speed=True); their verdicts and what the run queue granted."""
    service = Service(workspace_dir=tmp_path / "ws", backend=backend, lang="en")
    room = Classroom(f"sqlite:///{tmp_path / 'home' / 'classroom.db'}", adopt=Path("/nonexistent"))
    room.init("Timing")
    create_app(service, "unused-token-0123456789", classroom=room)
    try:
        log = GateLog(service.gate())
        exercise = service.exercise("vector-add")
        text = exercise.solution.read_text()
        verdicts: dict[str, object] = {}

        def check(name: str) -> None:
            learner = room.learner_service(service, room.add(name)[0])
            verdicts[name] = learner.check(exercise, text=text, record=False, speed=True, timeout=180)

        threads = [threading.Thread(target=check, args=(f"timer{i}",), daemon=True) for i in range(learners)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        return verdicts, log
    finally:
        service.close()
        room.close()


def assert_alone(log: GateLog, timed: int) -> None:
    """`timed` exclusive slots were granted, none overlapped by any other slot; shared slots overlapped."""
    exclusive = [(a, b) for alone, a, b in log.slots if alone]
    shared = [(a, b) for alone, a, b in log.slots if not alone]
    assert len(exclusive) == timed, log.slots
    for a, b in exclusive:
        beside = [(c, d) for _alone, c, d in log.slots if (c, d) != (a, b) and c < b and a < d]
        assert not beside, f"a run held a slot while a timing run ran: {beside}"
    peak = max(sum(1 for c, d in shared if c <= a < d) for a, _ in shared)
    assert peak >= 2, "the checks never ran side by side"


@pytest.mark.gpu
def test_speed_timing_runs_have_the_gpu_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU, four learners' passing checks at once, each timed (the speed line): every timing run held the
    GPU alone (no other run's slot overlapped it), and the checks themselves ran side by side."""
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRITONLAB_SLOTS", "4")
    verdicts, log = timed_checks_at_once(tmp_path, "gpu")
    timed = [v for v in verdicts.values() if v.passed and v.speed and not v.speed.get("error")]
    assert len(timed) == 4, {k: (v.passed, v.speed, v.speed_reason) for k, v in verdicts.items()}
    assert_alone(log, timed=4)
