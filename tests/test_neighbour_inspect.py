"""Issue 34 (item 2): two spinning Inspects leave a neighbour's check within twice its idle latency.

A hostile test of a class measured a neighbour's check taking 179.9 s instead of 1.66 s while one learner's two
Inspect requests imported `while True: pass`: Inspect queued as an ownerless run, so the two held both of the
interpreter's slots for their whole 180 s timeout. Now every kind of run waits in the one queue with its owner
(service/gate.py): anna's second Inspect waits for her first, and ben's check takes the other slot.

Through the web API of the classroom app (tests/classroom_app.py: `serve --classroom`'s app in-process, SQLite,
the real sandbox), two run slots (tests/conftest.py's TRITONLAB_SLOTS=2): ben's check latency is measured idle,
then while anna's first Inspect spins (seen running in the worker) and her second waits. Afterwards the test
stops her spinning runs from outside (Inspect has no Stop button; its timeout is 180 s)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from classroom_app import As, ClassServer, class_server

ROOT = Path(__file__).resolve().parent.parent
GOOD = (ROOT / "tests" / "fixtures" / "learners" / "good.py").read_text()
SPIN = "while True:\n    pass\n"
WAIT_S = 120.0


@pytest.fixture
def room(tmp_path: Path) -> Iterator[ClassServer]:
    with class_server(tmp_path, f"sqlite:///{tmp_path / 'classroom.db'}") as server:
        yield server


def save(who: As, text: str) -> None:
    r = who.put("/api/exercises/vector-copy/code", json={"text": text, "base_version": None, "force": True})
    assert r.status_code == 200, r.text


def check_seconds(who: As) -> float:
    """One check through the web API, from the POST to its verdict event; it must pass."""
    started = time.monotonic()
    r = who.post("/api/exercises/vector-copy/check")
    assert r.status_code == 200, r.text
    verdict = None
    with who.client.stream("GET", r.json()["events"], timeout=WAIT_S) as response:
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name == "verdict":
                verdict = json.loads(line[6:])
                break
    elapsed = time.monotonic() - started
    assert verdict is not None and verdict["passed"], verdict
    return elapsed


def inspect_runs(room: ClassServer) -> list:
    """The runs in flight in the worker whose job is an Inspect."""
    zygote = room.service.zygote()
    found = []
    for run in list(zygote._runs.values()):
        try:
            mode = json.loads((Path(run.run_dir) / "job.json").read_text()).get("mode")
        except (OSError, ValueError):
            continue
        if mode == "inspect" and run.status is None:
            found.append(run)
    return found


def test_two_spinning_inspects_leave_a_neighbours_check_within_twice_its_idle_latency(
    room: ClassServer,
) -> None:
    anna, ben = room.login("anna"), room.login("ben")
    save(ben, GOOD)
    check_seconds(ben)  # the first check warms the worker and ben's compile cache
    idle = min(check_seconds(ben) for _ in range(2))
    save(anna, SPIN)
    answers: list[int] = []

    def inspect() -> None:
        answers.append(
            anna.post("/api/exercises/vector-copy/inspect", json={"target": "cuda:90"}).status_code
        )

    spinners = [threading.Thread(target=inspect, daemon=True) for _ in range(2)]
    try:
        for thread in spinners:
            thread.start()
        deadline = time.monotonic() + WAIT_S
        while not (inspect_runs(room) and room.service.gate().waiting + room.service.gate().active >= 2):
            assert time.monotonic() < deadline, "anna's Inspects never started spinning"
            time.sleep(0.05)
        time.sleep(1.0)  # both are in: one spinning, the other queued behind it (or, the bug, both spinning)
        spinning = len(inspect_runs(room))
        busy = check_seconds(ben)
    finally:
        deadline = time.monotonic() + WAIT_S
        while any(t.is_alive() for t in spinners) and time.monotonic() < deadline:
            for run in inspect_runs(room):
                run.stop()
            time.sleep(0.1)
    print(f"idle {idle:.2f} s, beside the spinning Inspects {busy:.2f} s")
    assert busy <= 2 * idle, (
        f"ben's check took {busy:.2f} s beside anna's spinning Inspects, {idle:.2f} s idle"
    )
    assert spinning == 1, f"{spinning} of anna's Inspects were running at once"
    assert answers == [200, 200], (
        answers
    )  # each Inspect answered (a report saying it timed out or was stopped)
