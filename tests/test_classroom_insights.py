"""The numbers of the teacher's pictures (classroom/insights.py), over a class whose attempts are real verdicts:
each one graded by the real grader on the interpreter (vector-copy and vector-add, good and broken files),
recorded by the store's own `record_attempt`, then dated by the test so that every expected number is known.
On SQLite and on a real PostgreSQL (tests/classroom_pg.py). A passing GPU check's speed report is built by
`perf.bench_learner.speed_summary`, the function a GPU check uses (no GPU here)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tritonlab.classroom import insights
from tritonlab.classroom.room import Classroom
from tritonlab.store import schema as s

ROOT = Path(__file__).resolve().parent.parent
LEARNERS = ROOT / "tests" / "fixtures" / "learners"
NO_LEGACY = Path("/nonexistent/progress.db")
ADD_GOOD = (ROOT / "course" / "05-vector-add" / "exercises" / "vector-add" / "solution.py").read_text()
ADD_WRONG = ADD_GOOD.replace("x + y", "x - y").replace("x.to(tl.float32) + y", "x.to(tl.float32) - y")


def two_exercise_course(root: Path) -> Path:
    """Lessons 2 (vector-copy) and 5 (vector-add) of the real course."""
    course = root / "course"
    course.mkdir()
    for name in ("02-environment", "05-vector-add"):
        (course / name).symlink_to(ROOT / "course" / name)
    (course / "course.toml").write_text(
        'format_version = 1\nlessons = ["02-environment", "05-vector-add"]\n\n[title]\nen = "Two"\n'
    )
    return course


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Real verdicts (as stored: Verdict.to_json) of six checks on the interpreter, and the course."""
    from tritonlab.service import Service

    root = tmp_path_factory.mktemp("insights")
    old = os.environ.get("TRITONLAB_HOME")
    os.environ["TRITONLAB_HOME"] = str(root / "home")
    service = Service(course_dir=two_exercise_course(root), workspace_dir=root / "ws", backend="interpreter")
    try:
        copy, add = service.exercise("vector-copy"), service.exercise("vector-add")
        (root / "add_good.py").write_text(ADD_GOOD)
        (root / "add_wrong.py").write_text(ADD_WRONG)
        files = {
            "copy_good": (copy, LEARNERS / "good.py"),
            "copy_wrong": (copy, LEARNERS / "wrong_values.py"),
            "copy_raises": (copy, LEARNERS / "exception.py"),
            "copy_syntax": (copy, LEARNERS / "syntax_error.py"),
            "add_good": (add, root / "add_good.py"),
            "add_wrong": (add, root / "add_wrong.py"),
        }
        verdicts = {
            name: service.check(ex, file=path, seed=1, record=False, speed=False).to_json()
            for name, (ex, path) in files.items()
        }
        yield {"verdicts": verdicts, "course": service.course}
    finally:
        service.close()
        if old is None:
            os.environ.pop("TRITONLAB_HOME", None)
        else:
            os.environ["TRITONLAB_HOME"] = old


def gpu_pass(verdict: dict, ms: float, gbps: float, roof: float | None) -> dict:
    """A passing check as a GPU check stores it: backend gpu and the `speed` report of speed_summary."""
    from tritonlab.perf.bench_learner import LEARNER, speed_summary

    peaks = {"gpu": "NVIDIA H200", **({"copy_gbps": roof} if roof else {})}
    row = {
        "kernel": "vector_add", "dtype": "float32", "shape": [1 << 24], "bound": "memory", "peaks": peaks,
        "impls": {LEARNER: {"ms": ms, "gbps": gbps, "tflops": 0.0}}, "speedup": {},
    }  # fmt: skip
    return {**verdict, "backend": "gpu", "speed": speed_summary({"rows": [row]})}


def record(room: Classroom, user_id: int, verdict: dict, at: float) -> int:
    """Store a verdict as the learner's check (the store's own path), dated `at`."""
    attempt = room.db.learner(user_id).record_attempt(verdict)
    with room.db.engine.begin() as db:
        db.execute(s.attempts.update().where(s.attempts.c.id == attempt).values(at=at))
    return attempt


def test_the_classes_pictures_count_what_the_store_holds(graded: dict, classroom_url: str) -> None:
    v, course = graded["verdicts"], graded["course"]
    assert v["copy_good"]["passed"] and v["add_good"]["passed"]
    kinds = {name: (d["failures"] or [{}])[0].get("kind") for name, d in v.items() if not d["passed"]}
    assert kinds == {
        "copy_wrong": "wrong-result",
        "copy_raises": "exception",
        "copy_syntax": "exception",
        "add_wrong": "wrong-result",
    }
    room = Classroom(classroom_url, adopt=NO_LEGACY)
    try:
        room.init("Insight class")
        ids = {name: room.add(name)[0].id for name in ("anna", "ben", "cara", "dan", "eve")}
        teacher = room.user("teacher").id
        T = 1_000_000.0
        # vector-copy: anna fails twice then passes 300 s after her first check; ben passes at once; cara and
        # dan are stuck (cara's last failure is a wrong result; dan's a file that does not import)
        for verdict, at in (("copy_wrong", 0), ("copy_raises", 60), ("copy_good", 300), ("copy_good", 900)):
            record(room, ids["anna"], v[verdict], T + at)
        record(room, ids["ben"], v["copy_good"], T + 10)
        record(room, ids["cara"], v["copy_raises"], T)
        record(room, ids["cara"], v["copy_wrong"], T + 30)
        record(room, ids["dan"], v["copy_wrong"], T)
        record(room, ids["dan"], v["copy_syntax"], T + 5)
        record(room, ids["eve"], v["copy_wrong"], T)  # disabled below: not counted
        record(room, teacher, v["copy_wrong"], T)  # a teacher's own checks are not the class's
        room.set_disabled(room.user("eve"), True)
        # vector-add: ben passes after 11 failed checks (bucket 10+), 2 h after his first; anna's two GPU passes
        # (the faster one counts); cara's GPU pass has no measured roof; dan claims 150 % of the roof (refused)
        for i in range(11):
            record(room, ids["ben"], v["add_wrong"], T + i)
        record(room, ids["ben"], v["add_good"], T + 7200)
        record(room, ids["anna"], gpu_pass(v["add_good"], 0.05, 3200.0, 4000.0), T)
        record(room, ids["anna"], gpu_pass(v["add_good"], 0.04, 3600.0, 4000.0), T + 50)
        record(room, ids["cara"], gpu_pass(v["add_good"], 0.07, 2000.0, None), T)
        record(room, ids["dan"], gpu_pass(v["add_good"], 0.01, 6000.0, 4000.0), T)

        found = room.insights(course)
        assert [r["id"] for r in found["exercises"]] == ["vector-copy", "vector-add"]
        assert found["kinds"] == ["wrong-result", "exception"]  # FAILURE_KINDS order
        assert set(found["learners"]) == {ids[n] for n in ("anna", "ben", "cara", "dan")}
        copy, add = found["exercises"]
        assert copy["tried"] == 4 and copy["passed"] == 2
        assert copy["stuck"] == {"wrong-result": [ids["cara"]], "exception": [ids["dan"]]}
        assert copy["times"] == [
            {"user_id": ids["ben"], "seconds": 0.0},
            {"user_id": ids["anna"], "seconds": 300.0},
        ]
        assert copy["time_spread"] == {"n": 2, "min": 0.0, "median": 150.0, "max": 300.0}
        assert copy["attempts"] == [
            {"user_id": ids["ben"], "failed_before": 0},
            {"user_id": ids["anna"], "failed_before": 2},
        ]
        assert copy["buckets"] == [1, 0, 1, 0, 0, 0, 0] and found["buckets"][-1] == "10+"
        assert copy["speeds"] == [] and copy["speed_spread"] is None

        assert add["tried"] == 4 and add["passed"] == 4 and add["stuck"] == {}
        assert add["buckets"] == [3, 0, 0, 0, 0, 0, 1]
        assert {t["user_id"]: t["seconds"] for t in add["times"]}[ids["ben"]] == 7200.0
        speeds = {sp["user_id"]: sp for sp in add["speeds"]}
        assert set(speeds) == {ids["anna"], ids["cara"]}  # dan's 150 % was never stored as a speed
        assert speeds[ids["anna"]]["ms"] == 0.04 and speeds[ids["anna"]]["pct"] == 90.0
        assert speeds[ids["anna"]]["unit"] == "GB/s" and speeds[ids["anna"]]["gpu"] == "NVIDIA H200"
        assert speeds[ids["cara"]]["pct"] is None and add["unplaced"] == 1
        assert add["speed_spread"] == {"n": 1, "min": 90.0, "median": 90.0, "max": 90.0}

        # the same numbers straight from the table, by SQL written here
        with room.db.engine.begin() as db:
            rows = db.execute(
                sa.select(s.attempts.c.user_id, s.attempts.c.passed, s.attempts.c.failure_kind)
                .where(s.attempts.c.exercise == "vector-copy", s.attempts.c.user_id == ids["dan"])
                .order_by(s.attempts.c.id)
            ).fetchall()
        assert [r.failure_kind for r in rows] == ["wrong-result", "exception"] and not any(
            r.passed for r in rows
        )

        # a drill-down: the learners of one cell with their latest failure and their code as it is now
        assert insights.learners_of(found, "vector-copy", "exception") == [ids["dan"]]
        assert insights.learners_of(found, "vector-copy", "*") == sorted([ids["cara"], ids["dan"]])
        assert insights.learners_of(found, "vector-copy", None) == sorted(
            ids[n] for n in ("anna", "ben", "cara", "dan")
        )
        assert insights.learners_of(found, "vector-add", "exception") == []
        room.db.code(ids["dan"], course).save(course.exercise("vector-copy"), "# dan's try <b>\n", None)
        (dan,) = room.learner_details(course, "vector-copy", [ids["dan"]])
        assert dan["user"].username == "dan" and dan["checks"] == 2 and not dan["passed"]
        assert dan["failure"]["kind"] == "exception" and "SyntaxError" in dan["failure"]["message"]
        assert dan["code"] == "# dan's try <b>\n"
    finally:
        room.close()


def test_an_empty_class_has_no_rows(graded: dict, classroom_url: str) -> None:
    room = Classroom(classroom_url, adopt=NO_LEGACY)
    try:
        room.init("Empty class")
        room.add("anna")
        found = room.insights(graded["course"])
        assert found["exercises"] == [] and found["kinds"] == [] and len(found["learners"]) == 1
    finally:
        room.close()


def test_buckets_and_spreads() -> None:
    assert [insights.bucket_of(n) for n in (0, 1, 4, 5, 9, 10, 500)] == [0, 1, 4, 5, 5, 6, 6]
    assert insights.spread([]) is None
    assert insights.spread([3, 1, 2, 10]) == {"n": 4, "min": 1, "median": 2.5, "max": 10}
    assert insights._speed({"speed": {"pct_of_roof": float("nan"), "unit": "<b>", "gpu": 7}}) == {
        "pct": None, "achieved": None, "roof": None, "unit": None, "gpu": None,
    }  # fmt: skip
