"""Issue 34, item 3: the copies of a learner's code the classroom keeps are bounded in size, rate and total.

The measured attack was a loop of `POST /api/exercises/{id}/backup` growing the database by 17 MiB/s. Here a
learner loops that route, Reset and "Keep mine" (a forced save over a newer version) through the classroom app
on SQLite and PostgreSQL; the figures are written in the test, not read from the module that enforces them.
The clock of store/code_backups.py is moved forward between minutes (the database rows keep its times)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from classroom_app import ClassServer, class_server, database_url

from tritonlab.store import code_backups
from tritonlab.store import schema as s

KIB = 1024
PER_MINUTE, PER_EXERCISE, LEARNER_BYTES, LARGEST = 10, 20, 8 * 1024 * KIB, 512 * KIB
ROUTE = "/api/exercises/vector-copy/backup"


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ClassServer]:
    with class_server(tmp_path, database_url(request.param, tmp_path, request)) as made:
        yield made


class Clock:
    """code_backups' `time`, moved forward by hand: a minute passes when the test says so."""

    def __init__(self) -> None:
        import time

        self.real, self.offset = time, 0.0

    def time(self) -> float:
        return self.real.time() + self.offset


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock()
    monkeypatch.setattr(code_backups, "time", made)
    return made


def text(n: int, size: int) -> str:
    head = f"# copy {n}\n"
    return head + "x" * (size - len(head))


def copies(server: ClassServer, user: str) -> list[tuple[str, str, int]]:
    """(exercise, first line, size in bytes) of a learner's kept copies, oldest first."""
    b = s.code_backups
    with server.room.db.engine.connect() as conn:
        rows = conn.execute(
            sa.select(b.c.exercise, b.c.text).where(b.c.user_id == server.ids[user]).order_by(b.c.id)
        ).all()
    return [(r.exercise, r.text.split("\n", 1)[0], len(r.text.encode())) for r in rows]


def test_a_loop_of_backups_is_refused_past_ten_a_minute_and_a_large_copy_at_once(
    server: ClassServer, clock: Clock
) -> None:
    anna = server.login("anna")
    ben = server.login("ben")
    assert ben.post(ROUTE, json={"text": text(0, 4 * KIB)}).status_code == 200
    big = anna.post(ROUTE, json={"text": text(0, LARGEST + 1)})
    assert big.status_code == 413 and "512 KiB" in big.json()["error"], (big.status_code, big.text[:500])
    assert copies(server, "anna") == []
    answers = [anna.post(ROUTE, json={"text": text(n, 400 * KIB)}) for n in range(1, 31)]
    assert [r.status_code for r in answers] == [200] * PER_MINUTE + [429] * 20
    assert all(1 <= int(r.headers["retry-after"]) <= 61 for r in answers[PER_MINUTE:])
    assert "wait" in answers[-1].json()["error"]
    assert len(copies(server, "anna")) == PER_MINUTE
    # a reset and a forced save need a copy too: refused as a whole, the code as it was
    code = anna.get("/api/exercises/vector-copy/code").json()
    saved = anna.put(
        "/api/exercises/vector-copy/code", json={"text": "# mine\n", "base_version": code["version"]}
    )
    assert saved.status_code == 200
    assert anna.post("/api/exercises/vector-copy/reset").status_code == 429
    forced = anna.put(
        "/api/exercises/vector-copy/code",
        json={"text": "# keep mine\n", "base_version": code["version"], "force": True},
    )
    assert forced.status_code == 429
    assert anna.get("/api/exercises/vector-copy/code").json()["text"] == "# mine\n"
    # the same text as the newest copy is not kept again, and does not count
    same = anna.post(ROUTE, json={"text": text(PER_MINUTE, 400 * KIB)})
    assert same.status_code == 200 and len(copies(server, "anna")) == PER_MINUTE
    clock.offset += 61  # a minute later the learner may again
    assert anna.post("/api/exercises/vector-copy/reset").status_code == 200
    assert anna.get("/api/exercises/vector-copy/code").json()["text"] != "# mine\n"
    assert copies(server, "anna")[-1][1:] == ("# mine", len("# mine\n"))
    assert [c[1] for c in copies(server, "ben")] == ["# copy 0"]  # the other learner: untouched


def test_a_learners_copies_stay_within_twenty_per_exercise_and_eight_mib(
    server: ClassServer, clock: Clock
) -> None:
    anna = server.login("anna")
    assert server.login("ben").post(ROUTE, json={"text": text(0, 300 * KIB)}).status_code == 200
    for n in range(1, 41):  # small copies: the count binds
        assert anna.post(ROUTE, json={"text": text(n, 2 * KIB)}).status_code == 200
        if n % PER_MINUTE == 0:
            clock.offset += 61
    kept = copies(server, "anna")
    assert [c[1] for c in kept] == [f"# copy {n}" for n in range(21, 41)]  # the newest twenty
    for n in range(41, 141):  # a hundred large copies, 50 MiB sent: the bytes bind
        assert anna.post(ROUTE, json={"text": text(n, LARGEST)}).status_code == 200
        if n % PER_MINUTE == 0:
            clock.offset += 61
    kept = copies(server, "anna")
    assert sum(c[2] for c in kept) <= LEARNER_BYTES and len(kept) == LEARNER_BYTES // LARGEST
    assert [c[1] for c in kept] == [f"# copy {n}" for n in range(141 - len(kept), 141)]
    assert [c[1] for c in copies(server, "ben")] == ["# copy 0"]
    if server.room.db.url.startswith("sqlite"):  # the file stays near the cap: freed pages are reused
        path = server.room.db.url.removeprefix("sqlite:///")
        assert os.path.getsize(path) + os.path.getsize(path + "-wal") < 3 * LEARNER_BYTES


def test_the_eight_mib_are_counted_over_all_of_a_learners_exercises(
    server: ClassServer, clock: Clock
) -> None:
    """Through the store: other exercises' copies count toward one learner's total; the oldest go first."""
    anna, ben = server.ids["anna"], server.ids["ben"]
    with server.room.db.engine.begin() as conn:
        code_backups.keep(conn, ben, "other", "discarded", text(0, LARGEST))
    for n in range(1, 25):
        with server.room.db.engine.begin() as conn:
            assert code_backups.keep(conn, anna, f"exercise-{n % 3}", "discarded", text(n, LARGEST))
        if n % PER_MINUTE == 0:
            clock.offset += 61
    kept = copies(server, "anna")
    assert [c[1] for c in kept] == [f"# copy {n}" for n in range(9, 25)]
    assert {c[0] for c in kept} == {"exercise-0", "exercise-1", "exercise-2"}
    with server.room.db.engine.connect() as conn:
        assert code_backups.usage(conn, anna) == {"copies": 16, "bytes": 16 * LARGEST}
        assert code_backups.usage(conn, ben) == {"copies": 1, "bytes": LARGEST}
