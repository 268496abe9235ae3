"""Issue 34, items 3 and 5 (joins): the join link tells nobody who is in the class, closes by itself, and one
address cannot join without end.

- The open join link answered "'alice' is taken": a list of names gave the class's roster. Now a join's
  username is the name chosen plus a number drawn by the server (`anna-417`), whether the name is taken or
  free: same status, same fields, no "taken" anywhere; the learner reads their username on the page. The
  existing `anna` is untouched.
- The link was open until a teacher closed it. Now it opens for a while (2 h by default, `hours` on the
  teacher's route, `--hours` on the CLI) and is closed afterwards; a link opened before expiries existed
  counts as closed.
- Joins with the right code: at most JOINS_PER_MINUTE per client address (429 with Retry-After); another
  address is not affected. A wrong code is answered before any of that (cheap: no hash)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from classroom_app import BASE, ClassServer, class_server, database_url
from fastapi.testclient import TestClient

from tritonlab.web.classroom.login import JOINS_PER_MINUTE

ROOT = Path(__file__).resolve().parent.parent
ADDRESSES = iter(f"10.0.{n // 250}.{n % 250 + 1}" for n in range(10_000))


@pytest.fixture
def room(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ClassServer]:
    with class_server(tmp_path, database_url("sqlite", tmp_path, request)) as made:
        yield made


def visitor(room: ClassServer, address: str | None = None) -> TestClient:
    return TestClient(room.app, base_url=BASE, client=(address or next(ADDRESSES), 40000))


def join(client: TestClient, room: ClassServer, name: str, password: str = "pw-joiner-12345"):  # noqa: ANN201
    body = {"username": name, "display_name": name.title(), "password": password}
    return client.post(f"/api/join/{room.join_code}", json=body, headers={"Origin": BASE})


def test_a_join_answers_the_same_for_a_taken_name_and_a_free_one(room: ClassServer) -> None:
    taken = ["anna", "ben", "teacher"]
    free = ["zoe", "yuri", "xavier"]
    answers = {}
    for name in taken + free:
        r = join(visitor(room), room, name)
        answers[name] = r
        assert r.status_code == 200, (name, r.text)
        assert "taken" not in r.text.lower()
        assert re.fullmatch(rf"{name}-\d{{3,4}}", r.json()["username"]), r.json()
    shapes = {tuple(sorted(r.json())) for r in answers.values()}
    assert len(shapes) == 1, shapes  # the same fields, whichever the name
    assert len({r.json()["username"] for r in answers.values()}) == len(answers)
    # the existing accounts are untouched: anna still logs in as anna, with her own password
    assert room.login("anna").me["username"] == "anna"
    # and the learner can log in again with the username the join gave them
    again = visitor(room).post(
        "/api/login",
        json={"username": answers["zoe"].json()["username"], "password": "pw-joiner-12345"},
        headers={"Origin": BASE},
    )
    assert again.status_code == 200
    # a name that could not be any username (too long once the number is added) is refused for its form only
    long = join(visitor(room), room, "a" * 29)
    assert long.status_code == 400 and "28" in long.json()["error"]


def test_the_join_link_closes_by_itself(room: ClassServer) -> None:
    teacher = room.login("teacher")
    opened = teacher.post("/api/classroom/join", json={"value": True, "hours": 0.5}).json()
    assert opened["join_open"] is True and abs(opened["join_open_until"] - (time.time() + 1800)) < 60
    assert join(visitor(room), room, "early").status_code == 200
    room.room.db.set_setting("join_open_until", repr(time.time() - 1))  # half an hour later
    late = join(visitor(room), room, "late")
    assert late.status_code == 403 and "expired" in late.json()["error"]
    assert "join-form" not in visitor(room).get(f"/join/{room.join_code}").text  # the page says closed
    assert room.room.the_class()["join_open"] is False
    # a link opened before expiries existed (join_open set, no expiry recorded) counts as closed
    with room.room.db.engine.begin() as db:
        db.exec_driver_sql("DELETE FROM classroom_settings WHERE key = 'join_open_until'")
    room.room.db.set_join_open(True)
    assert join(visitor(room), room, "older").status_code == 403
    # the teacher's page opens it for two hours by default
    assert teacher.post("/api/classroom/join", json={"value": True}).json()["join_open"] is True
    assert abs(room.room.the_class()["join_open_until"] - (time.time() + 7200)) < 60
    assert teacher.post("/api/classroom/join", json={"value": True, "hours": 1000}).status_code == 422


def test_one_address_joins_at_most_the_limit_per_minute(room: ClassServer) -> None:
    busy = "10.9.9.9"
    made = [join(visitor(room, busy), room, f"flood{i}") for i in range(JOINS_PER_MINUTE)]
    assert all(r.status_code == 200 for r in made), [r.text for r in made if r.status_code != 200][:2]
    over = join(visitor(room, busy), room, "flood-over")
    assert over.status_code == 429, over.text
    assert 1 <= int(over.headers["retry-after"]) <= 61
    assert "set-cookie" not in over.headers
    wrong = visitor(room, busy).post(
        "/api/join/not-the-code",
        json={"username": "x1", "password": "pw-joiner-12345"},
        headers={"Origin": BASE},
    )
    assert wrong.status_code == 404  # a wrong code is still told so (it costs nothing)
    assert join(visitor(room, "10.9.9.10"), room, "neighbour").status_code == 200  # another address


def test_the_cli_opens_the_link_for_a_while(tmp_path: Path) -> None:
    env = {
        "TRITONLAB_HOME": str(tmp_path),
        "TRITONLAB_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "src"),
        "TRITONLAB_ARGON2": "t=1,m=1024,p=1",
    }

    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "tritonlab", "classroom", *args], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    cli("init", "--name", "CLI class")
    assert re.search(r"is open until \d{4}-\d\d-\d\d \d\d:\d\d", cli("join"))  # init opened it for 2 h
    assert "is closed" in cli("join", "--close")
    assert "is open until" in cli("join", "--open", "--hours", "0.25")
