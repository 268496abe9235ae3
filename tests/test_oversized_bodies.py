"""Issue 34, item 5: an oversized body is a 413 on every route, never a 500.

A 3 MiB `PUT /api/progress` with Content-Length and no session was a 500 (`KeyError: 'code_kib'` in
`ClassroomGuard`: its 413 message lacked a figure the text names). The property, over every route and method
of the app (found by walking the app, so a route added later is covered), with and without a session (the
classroom) or the token (single-user): a body over the 2 MiB cap gets 413 with the limit in its message —
announced with Content-Length (refused unread) or sent chunked (read up to the cap, then refused)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from classroom_app import BASE, ClassServer, class_server, database_url, every_route, fill, single_server
from fastapi.testclient import TestClient

from tritonlab.web.security import MAX_BODY_BYTES

SIZE = 3 << 20  # the 3 MiB


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[ClassServer]:
    root = tmp_path_factory.mktemp("bodies-class")
    with class_server(root, database_url("sqlite", root, request)) as made:
        yield made


def chunks() -> Iterator[bytes]:
    block = b"x" * (64 << 10)
    for _ in range(SIZE // len(block)):
        yield block


def oversized(client: TestClient, method: str, path: str, headers: dict, chunked: bool):  # noqa: ANN201
    body = chunks() if chunked else b"x" * SIZE
    kind = {"Content-Type": "application/json", **headers}
    return client.request(method, path, content=body, headers=kind, follow_redirects=False)


def check_every_route(app, clients: dict[str, tuple[TestClient, dict]]) -> int:  # noqa: ANN001
    """Every route x method x client x (announced, chunked): 413 naming the limit. Returns the count."""
    wrong: list[str] = []
    count = 0
    for route in every_route(app):
        path = fill(route.path, {})
        for method in sorted(route.methods):
            for who, (client, headers) in clients.items():
                for chunked in (False, True):
                    r = oversized(client, method, path, headers, chunked)
                    count += 1
                    how = "chunked" if chunked else "with Content-Length"
                    if r.status_code != 413:
                        wrong.append(f"{method} {path} as {who}, {how}: {r.status_code} {r.text[:120]}")
                    elif str(MAX_BODY_BYTES // 1024) not in r.text:
                        wrong.append(f"{method} {path} as {who}, {how}: the 413 does not name the limit")
    assert not wrong, "\n".join(wrong[:40])
    return count


def test_every_classroom_route_refuses_an_oversized_body_with_413(room: ClassServer) -> None:
    anna = room.login("anna")
    teacher = room.login("teacher")
    count = check_every_route(
        room.app,
        {
            "a visitor": (room.client(), {"Origin": BASE}),
            "a learner": (anna.client, anna.headers),
            "the teacher": (teacher.client, teacher.headers),
        },
    )
    assert count > 100  # the walk found the routes
    # the request exactly, and the server still answers afterwards
    r = room.client().put("/api/progress", content=b"x" * SIZE, headers={"Content-Length": str(SIZE)})
    assert r.status_code == 413 and "2048 KiB" in r.json()["error"], r.text[:300]
    assert anna.get("/api/me").json()["username"] == "anna"


def test_every_single_user_route_refuses_an_oversized_body_with_413(tmp_path: Path) -> None:
    token = "bodies-token-0123456789"
    with single_server(tmp_path, token) as single:
        with_token = TestClient(single.app, base_url=BASE)
        with_token.get(f"/?token={token}", follow_redirects=False)  # the cookie
        count = check_every_route(
            single.app,
            {
                "no token": (TestClient(single.app, base_url=BASE), {"Origin": BASE}),
                "the cookie": (with_token, {"Origin": BASE}),
                "a bearer token": (
                    TestClient(single.app, base_url=BASE),
                    {"Authorization": f"Bearer {token}"},
                ),
            },
        )
        assert count > 100
