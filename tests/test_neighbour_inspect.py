"""Issue 34 (item 2): two spinning Inspects leave a neighbour's check within twice its idle latency.

A hostile test of a class measured a neighbour's check taking 179.9 s instead of 1.66 s while one learner's two
Inspect requests imported `while True: pass` (and his Visualize got 429): Inspect queued as an ownerless run, so
the two held both of the interpreter's slots for their whole 180 s timeout, and the server's picture slots. Now
every kind of run waits in the one queue with its owner (service/gate.py), and a learner holds one picture slot
(web/viz_api.py): anna's second Inspect is refused at once (429), her spinning `run` waits for her Inspect,
and ben's check takes the other slot; his Visualize is drawn.

Through the web API of the classroom app (tests/classroom_app.py: `serve --classroom`'s app in-process, SQLite,
the real sandbox), two run slots (tests/conftest.py's TRITONLAB_SLOTS=2): ben's check latency is measured idle
(the median of three checks), then (the slowest of three) while anna's Inspect spins (seen running in the
worker) and her run waits. Afterwards the test stops her runs (the Inspect from outside: it has no Stop button,
and its timeout is 180 s)."""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from classroom_app import As, ClassServer, class_server

from tritonlab.runs.cgroups import hierarchy

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
    """One check through the web API, from the POST to its verdict event; it must pass. The stream is read
    to its `end`: until then the check is the learner's run in flight, and a next one would be refused (429)."""
    started = time.monotonic()
    r = who.post("/api/exercises/vector-copy/check")
    assert r.status_code == 200, r.text
    verdict, elapsed = None, None
    with who.client.stream("GET", r.json()["events"], timeout=WAIT_S) as response:
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
                if name == "end":
                    break
            elif line.startswith("data: ") and name == "verdict":
                verdict = json.loads(line[6:])
                elapsed = time.monotonic() - started
    assert verdict is not None and verdict["passed"] and elapsed is not None, verdict
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
    idle = statistics.median(check_seconds(ben) for _ in range(3))
    save(anna, SPIN)
    answers: list[int] = []

    def inspect() -> None:
        answers.append(
            anna.post("/api/exercises/vector-copy/inspect", json={"target": "cuda:90"}).status_code
        )

    spinning = threading.Thread(target=inspect, daemon=True)
    refused = threading.Thread(target=lambda: None)
    run = None
    try:
        spinning.start()
        deadline = time.monotonic() + WAIT_S
        while not inspect_runs(room):
            assert time.monotonic() < deadline, "anna's Inspect never started spinning"
            time.sleep(0.05)
        second: list = []
        refused = threading.Thread(
            target=lambda: second.append(anna.post("/api/exercises/vector-copy/inspect", json={})),
            daemon=True,
        )
        refused.start()
        refused.join(15)  # a refusal is immediate; an Inspect let in would wait for her first one (180 s)
        assert second and second[0].status_code == 429, "anna's second Inspect was not refused at once"
        assert "already have" in second[0].text, second[0].text
        run = anna.post("/api/exercises/vector-copy/run").json()  # spins too, once it has a slot
        # The hostile Inspects spun for their whole 180 s; past its first LONG_RUN_S a spinning run has a tenth
        # of a fresh run's CPU weight (collect.Run): measure there, where a neighbour spends nearly all of it.
        time.sleep(max(1.0, inspect_runs(room)[0].started + hierarchy.LONG_RUN_S + 0.5 - time.monotonic()))
        queued = room.service.gate().waiting
        busy = max(check_seconds(ben) for _ in range(3))  # the worst a neighbour saw
        picture = ben.post("/api/exercises/vector-copy/viz")  # anna's requests take no picture slot of his
    finally:
        if run is not None:
            anna.post(run["stop"])
        deadline = time.monotonic() + WAIT_S
        while (spinning.is_alive() or refused.is_alive()) and time.monotonic() < deadline:
            for handle in inspect_runs(room):
                handle.stop()
            time.sleep(0.1)
    print(f"idle {idle:.2f} s, beside anna's spinning Inspect and run {busy:.2f} s")
    assert busy <= 2 * idle, f"ben's check took {busy:.2f} s beside anna's spinning runs, {idle:.2f} s idle"
    assert queued == 1, "anna's run did not wait for her Inspect: she held two slots"
    assert picture.status_code == 200, picture.text
    assert answers == [200], answers  # the Inspect answered (a report saying it was stopped)
