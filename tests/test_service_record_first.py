"""Nothing is shown that is not saved (issue 31): `Service.check` records the attempt before `on_verdict` shows
the verdict, and a passing GPU check's speed, timed afterwards, is added to that saved attempt. Before, the page
saw "passed" and then waited for two more sandboxed timing runs (up to 120 s each) with nothing saved: a timing
run that failed, or a server killed in that window, lost the pass.

In-process here, on both stores (the single-user SQLite file; the classroom's SQLAlchemy store on SQLite and
PostgreSQL); against real killed servers in tests/test_service_kill9.py."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURE_COURSE

from tritonlab.classroom.room import Classroom, LearnerService
from tritonlab.models import Verdict
from tritonlab.service import Service
from tritonlab.store import leaderboard

NO_LEGACY = Path("/nonexistent/progress.db")


class Probe(Service):
    """A Service whose passing checks can be sent down the speed branch on the interpreter (a GPU check takes it
    for real: `_no_speed`), and whose timing can be made to fail (a dead worker, a full disk, a lost remote
    worker). One for the whole module: each new worker costs seconds."""

    timed = False
    timing_error: Exception | None = None

    def _no_speed(self, verdict: Verdict, wanted: bool) -> str:
        return "" if self.timed and verdict.passed and wanted else super()._no_speed(verdict, wanted)

    def _add_speed(self, *args: object, **kwargs: object) -> None:
        if self.timing_error is not None:
            raise self.timing_error
        super()._add_speed(*args, **kwargs)


class TimedLearner(LearnerService):
    def _no_speed(self, verdict: Verdict, wanted: bool) -> str:
        return "" if verdict.passed and wanted else super()._no_speed(verdict, wanted)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probe]:
    home = tmp_path_factory.mktemp("record-first")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(home / "home"))
        made = Probe(course_dir=FIXTURE_COURSE, workspace_dir=home / "ws", backend="interpreter")
        yield made
        made.close()


@pytest.fixture
def probe(service: Probe) -> Iterator[Probe]:
    yield service
    service.timed, service.timing_error = False, None


def stored_by_seed(service: Service, seed: int) -> list[dict]:
    return [a for a in service.store.attempts("vector-copy") if a["seed"] == seed]


def check_and_look(service: Service, seed: int) -> tuple[Verdict, list[list[dict]]]:
    """Check the reference solution, recording; what the store held when `on_verdict` was called."""
    exercise = service.exercise("vector-copy")
    seen: list[list[dict]] = []
    verdict = service.check(
        exercise,
        file=exercise.solution,
        seed=seed,
        record=True,
        on_verdict=lambda v: seen.append(stored_by_seed(service, v.seed)),
    )
    return verdict, seen


def test_the_attempt_is_saved_before_the_verdict_is_shown(probe: Probe) -> None:
    verdict, seen = check_and_look(probe, seed=101)
    assert verdict.passed, verdict.to_json()
    assert len(seen) == 1 and [a["passed"] for a in seen[0]] == [True], seen  # saved, then shown
    assert len(stored_by_seed(probe, 101)) == 1  # once: no second row after the verdict


def test_a_class_saves_the_attempt_before_the_verdict_is_shown(classroom_url: str, probe: Probe) -> None:
    base = probe  # the class's shared workers
    room = Classroom(classroom_url, adopt=NO_LEGACY)
    try:
        room.init("Class")
        anna = room.add("anna")[0]
        for kind in (LearnerService, TimedLearner):  # the speed branch too (the leaderboard's path)
            mine = kind(base, room.db, anna, room.run_folder(anna))
            verdict, seen = check_and_look(mine, seed=202 if kind is LearnerService else 203)
            assert verdict.passed and len(seen) == 1 and [a["passed"] for a in seen[0]] == [True], seen
            assert len(stored_by_seed(mine, verdict.seed)) == 1
        assert room.matrix(base.course)["learners"][0]["cells"]["vector-copy"]["attempts"] == 2
    finally:
        room.close()


def stored_verdict(service: Service, seed: int) -> dict:
    with sqlite3.connect(service.store.path) as db:
        (text,) = db.execute("SELECT verdict FROM attempts WHERE seed = ?", (seed,)).fetchone()
    return json.loads(text)


def test_the_speed_is_added_to_the_attempt_saved_before_it(probe: Probe) -> None:
    """The timed branch (a passing GPU check's; forced here on the interpreter): the attempt saved before the
    verdict was shown is the one that gets the speed report, updated in place."""
    probe.timed = True
    shown: list[dict] = []
    exercise = probe.exercise("vector-copy")
    verdict = probe.check(
        exercise,
        file=exercise.solution,
        seed=303,
        on_verdict=lambda v: shown.append(stored_verdict(probe, v.seed)),
    )
    assert verdict.passed and "speed_s" in verdict.timings  # it took the timed branch
    assert "speed_reason" not in shown[0]  # saved before the timing
    after = stored_verdict(probe, 303)
    assert after["speed_reason"] == verdict.speed_reason != ""  # the fixture's vector-copy has no speed case
    assert "speed_s" in after["timings"]
    assert len(stored_by_seed(probe, 303)) == 1


def test_a_timing_run_that_fails_loses_no_attempt(probe: Probe) -> None:
    probe.timed, probe.timing_error = True, RuntimeError("the timing run's worker died")
    exercise = probe.exercise("vector-copy")
    shown: list[Verdict] = []
    with pytest.raises(RuntimeError, match="worker died"):
        probe.check(exercise, file=exercise.solution, seed=404, on_verdict=shown.append)
    assert shown and shown[0].passed  # the page saw the pass …
    assert [a["passed"] for a in stored_by_seed(probe, 404)] == [True]  # … and it is saved


# ---- the stores' update of a saved attempt ---------------------------------------------------------------


def gpu_verdict(seed: int, ms: float | None) -> dict:
    speed = None if ms is None else {"ms": ms, "achieved": 1.0, "unit": "GB/s", "gpu": "NVIDIA H200"}
    return {"exercise": "vector-copy", "passed": True, "backend": "gpu", "seed": seed, "speed": speed}


def test_the_single_user_store_updates_the_attempt_in_place(tmp_path: Path) -> None:
    from tritonlab.store.progress import Store

    store = Store(tmp_path / "progress.db")
    other = store.record_attempt(gpu_verdict(1, None))
    attempt = store.record_attempt(gpu_verdict(2, None))
    store.add_speed(attempt, gpu_verdict(2, 0.25))
    with sqlite3.connect(tmp_path / "progress.db") as db:
        rows = dict(db.execute("SELECT id, verdict FROM attempts").fetchall())
    assert json.loads(rows[attempt])["speed"]["ms"] == 0.25 and json.loads(rows[other])["speed"] is None
    assert [a["id"] for a in store.attempts()] == [other, attempt]


def test_the_class_store_puts_the_speed_on_that_learners_attempt_only(classroom_url: str) -> None:
    """The leaderboard reads the speed columns of the attempt row: `add_speed` fills them in, on the row of the
    learner it was made for; another learner's store cannot touch it with the same id."""
    room = Classroom(classroom_url, adopt=NO_LEGACY)
    try:
        room.init("Class")
        anna, ben = room.add("anna")[0], room.add("ben")[0]
        room.set_leaderboard_name(anna, "Anna")
        room.set_leaderboard_name(ben, "Ben")
        attempt = room.db.learner(anna.id).record_attempt(gpu_verdict(5, None))  # saved, then shown
        assert leaderboard.board(room.db, ["vector-copy"]) == {"vector-copy": []}
        room.db.learner(ben.id).add_speed(attempt, gpu_verdict(5, 0.001))  # not ben's row: nothing changes
        assert leaderboard.board(room.db, ["vector-copy"]) == {"vector-copy": []}
        room.db.learner(anna.id).add_speed(attempt, gpu_verdict(5, 0.25))  # timed afterwards
        (row,) = leaderboard.board(room.db, ["vector-copy"])["vector-copy"]
        assert (row["name"], row["ms"], row["gpu"]) == ("Anna", 0.25, "NVIDIA H200")
        assert [a["id"] for a in room.db.learner(anna.id).attempts()] == [attempt]
        assert room.db.learner(ben.id).attempts() == []
    finally:
        room.close()
