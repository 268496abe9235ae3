"""Issue 31, row 4: the join link is the only way in. `POST /api/join/<code>` with any code but the class's —
near misses included — is 404 and makes no account (the accounts are counted in the database before and
after); while the teacher has the link closed, even the right code is refused and makes none. The right code
on an open link is the control. From a visitor and from a logged-in learner; on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from classroom_app import BASE, ClassServer, class_server, database_url
from fastapi.testclient import TestClient

NAMES = (f"joiner{n}" for n in itertools.count())


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassServer]:
    root = tmp_path_factory.mktemp(f"join-{request.param}")
    with class_server(root, database_url(request.param, root, request)) as made:
        yield made


def accounts(server: ClassServer) -> int:
    with server.room.db.engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM users")).scalar())


def wrong_codes(code: str) -> dict[str, str]:
    return {
        "another code": secrets.token_urlsafe(9),
        "one character": code[0],
        "a prefix": code[:-1],
        "one character more": code + "A",
        "the last character changed": code[:-1] + ("B" if code[-1] != "B" else "C"),
        "another case": code.swapcase(),
        "a space before": " " + code,
        "a NUL after": code + "\x00",
        "the code twice": code + code,
        "a path step": "../" + code,
        "a query": code + "?x=1",
        "the teacher's username": "teacher",
    }


def join(client: TestClient, code: str, headers: dict | None = None):  # noqa: ANN201
    name = next(NAMES)
    body = {"username": name, "display_name": name, "password": "pw-joiner-12345"}
    return client.post(
        f"/api/join/{quote(code, safe='')}", json=body, headers={"Origin": BASE, **(headers or {})}
    )


def test_a_wrong_join_code_makes_no_account(server: ClassServer) -> None:
    code = server.join_code
    anna = server.login("anna")
    before = accounts(server)
    for what, wrong in wrong_codes(code).items():
        for who, client, headers in (
            ("a visitor", server.client(), {}),
            ("a logged-in learner", anna.client, {"X-CSRF-Token": anna.csrf}),
        ):
            r = join(client, wrong, headers)
            assert r.status_code == 404, f"{what} ({wrong!r}) from {who}: {r.status_code} {r.text[:200]}"
            assert "set-cookie" not in r.headers, what
        page = server.client().get(f"/join/{quote(wrong, safe='')}")
        assert page.status_code == 404, f"the join page for {what}: {page.status_code}"
    empty = join(server.client(), "")  # /api/join/ names no code at all
    assert empty.status_code in (404, 405), empty.status_code
    assert accounts(server) == before
    assert anna.get("/api/me").json()["username"] == "anna"  # still herself: joining did not log her out
    # the control: the right code on the open link makes one account and logs it in
    visitor = server.client()
    r = join(visitor, code)
    assert r.status_code == 200 and r.json()["role"] == "learner", r.text
    assert accounts(server) == before + 1
    assert visitor.get("/api/me").json()["username"] == r.json()["username"]


def test_a_closed_join_link_makes_no_account(server: ClassServer) -> None:
    teacher = server.login("teacher")
    code = server.join_code
    assert teacher.post("/api/classroom/join", json={"value": False}).json() == {
        "join_open": False,
        "join_open_until": None,
    }
    try:
        before = accounts(server)
        r = join(server.client(), code)
        assert r.status_code == 403 and "closed" in r.json()["error"], r.text
        assert "set-cookie" not in r.headers
        for wrong in wrong_codes(code).values():  # a wrong code on a closed link: refused too
            assert join(server.client(), wrong).status_code in (403, 404)
        assert accounts(server) == before
    finally:
        opened = teacher.post("/api/classroom/join", json={"value": True}).json()
        assert opened["join_open"] is True and opened["join_open_until"] > 0
    assert join(server.client(), code).status_code == 200  # open again: the control
    assert accounts(server) == before + 1
