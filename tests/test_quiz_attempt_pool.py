"""Issue 34, item 3: the quiz-attempt pool is per learner.

Every view of a lesson page with a quiz makes an attempt, kept in the server's memory. The pool was one list
of 200 for the whole class, so a learner who loaded lesson pages 201 times evicted a neighbour's attempt and
the neighbour's answer got 404. Now each learner has a pool of their own (ATTEMPTS_PER_LEARNER) and a ceiling
for all together (MAX_ATTEMPTS_ALL) is taken from whoever holds the most."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from classroom_app import ClassServer, class_server, database_url

from tritonlab.web.classroom.ownership import ATTEMPTS_PER_LEARNER, OwnedAttempts, current_user
from tritonlab.web.quiz_api import MAX_ATTEMPTS


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[ClassServer]:
    root = tmp_path_factory.mktemp("quiz-pool")
    with class_server(root, database_url("sqlite", root, request)) as made:
        yield made


def attempt_of(page: str) -> str:
    found = re.search(r'data-attempt="([^"]+)"', page)
    assert found, "the lesson page has no quiz attempt"
    return found.group(1)


def test_a_learner_reloading_lesson_pages_never_evicts_a_neighbours_attempt(room: ClassServer) -> None:
    anna, ben = room.login("anna"), room.login("ben")
    bens = attempt_of(ben.get("/lessons/01-intro").text)
    first_of_anna = attempt_of(anna.get("/lessons/01-intro").text)
    views = max(MAX_ATTEMPTS, ATTEMPTS_PER_LEARNER) + 1  # the 201, past any pool size
    last = ""
    for _ in range(views):
        last = attempt_of(anna.get("/lessons/01-intro").text)
    answer = {"question": "mask", "response": 1}
    r = ben.post(f"/api/quiz/{bens}/answer", json=answer)
    assert r.status_code == 200 and r.json()["correct"] is True, r.text
    # anna's newest attempt works; her own oldest is what she dropped, and her pool stays bounded
    assert anna.post(f"/api/quiz/{last}/answer", json=answer).status_code == 200
    assert anna.post(f"/api/quiz/{first_of_anna}/answer", json=answer).status_code == 404
    pool = room.app.state.quiz_attempts
    assert pool.count(room.ids["anna"]) == ATTEMPTS_PER_LEARNER
    assert pool.count(room.ids["ben"]) == 1
    # and ben's attempt is still his alone
    assert (
        anna.post(f"/api/quiz/{bens}/answer", json={"question": "programs", "response": 3}).status_code == 404
    )


class Who:
    def __init__(self, user_id: int) -> None:
        self.id = user_id


def test_the_class_wide_ceiling_is_taken_from_whoever_holds_the_most(room: ClassServer) -> None:
    """With a small ceiling: a heavy learner and two light ones; the light ones keep every attempt."""

    lesson = room.service.lesson("01-intro")
    pool = OwnedAttempts(per_learner=10, total=12)
    kept: dict[int, list[str]] = {1: [], 2: [], 3: []}

    def new(user: int) -> str:
        token = current_user.set(Who(user))  # type: ignore[arg-type]
        try:
            attempt = pool.new(lesson, "en").id
            kept[user].append(attempt)
            return attempt
        finally:
            current_user.reset(token)

    new(2), new(3)
    for _ in range(30):
        new(1)
    assert pool.count() == 12 and pool.count(2) == 1 and pool.count(3) == 1 and pool.count(1) == 10

    def get(user: int, attempt: str):  # noqa: ANN202
        token = current_user.set(Who(user))  # type: ignore[arg-type]
        try:
            return pool.get(attempt)
        finally:
            current_user.reset(token)

    assert get(2, kept[2][0]) is not None and get(3, kept[3][0]) is not None
    assert get(1, kept[1][-1]) is not None and get(1, kept[1][0]) is None
    for _ in range(5):  # past the ceiling with pools of equal size: the largest pool pays first
        new(2)
    assert pool.count() == 12 and pool.count(3) == 1
