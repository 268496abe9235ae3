"""What a learner or a visitor types reaches the class's database and pages safely (issue 31's held-out mutations
found these untested; the first test found 500s on PostgreSQL, the second on both servers):

- every text field of every request body the app takes (the body models are read from the app's routes, so a new
  field is covered without editing this file), at its length limit, one past it, with a NUL, with control
  characters and with text beyond ASCII, is answered below 500 on SQLite and on PostgreSQL (PostgreSQL cannot
  store a NUL or a name longer than its column: an unchecked one was a 500);
- a secret a request carries (the join code, the CSRF header, the session cookie; the single-user token as
  `?token=`, Bearer and cookie) with a character beyond ASCII is refused, never a 500 (`hmac.compare_digest`
  raises TypeError on such text);
- a learner's own text (display name, code, leaderboard name) is shown as text on every page the teacher or the
  learner opens (walked from the app), never as markup.
"""

from __future__ import annotations

import itertools
import types
import typing
from collections.abc import Iterator
from urllib.parse import quote

import annotated_types
import pytest
from classroom_app import (
    ANY_BODY,
    BASE,
    ClassServer,
    SingleServer,
    class_server,
    database_url,
    every_route,
    fill,
    single_server,
)
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel

from tritonlab.web.security import cookie_name

TOKEN = "inputs-token-0123456789abcdef"
FRESH = (f"fresh{n}" for n in itertools.count())
NO_LIMIT = 100_000  # the "long" text of a field that declares no length limit


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassServer]:
    root = tmp_path_factory.mktemp(f"inputs-{request.param}")
    with class_server(root, database_url(request.param, root, request)) as made:
        yield made


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SingleServer]:
    with single_server(tmp_path_factory.mktemp("inputs-single"), TOKEN) as made:
        yield made


# ---- every text field of every body ------------------------------------------------------------------------------


def api_routes(routes: list) -> Iterator[APIRoute]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif hasattr(route, "original_router"):
            yield from api_routes(route.original_router.routes)


def body_model(route: APIRoute) -> type[BaseModel] | None:
    """The pydantic model a route reads its JSON body into (`Model | None` too), else None."""
    if route.body_field is None:
        return None
    annotation = route.body_field.field_info.annotation
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def takes_text(annotation: object) -> bool:
    if annotation is str:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(takes_text(a) for a in typing.get_args(annotation))
    return False


def text_fields(model: type[BaseModel]) -> Iterator[tuple[str, int | None]]:
    """(field, its max_length or None) for every field of the model that takes text."""
    for name, field in model.model_fields.items():
        if takes_text(field.annotation):
            limits = [m.max_length for m in field.metadata if isinstance(m, annotated_types.MaxLen)]
            yield name, min(limits) if limits else None


def variants(limit: int | None) -> dict[str, str]:
    base = "mallory-x"
    out = {
        "with a NUL": base + "\x00",
        "with a tab and a newline": base + "\t\n",
        "beyond ASCII": base + "é€😀",
    }
    if limit is None:
        out["long"] = "a" * NO_LIMIT
    else:
        out["at its limit"] = "a" * limit
        out["one past its limit"] = "a" * (limit + 1)
    return out


def base_body(path: str) -> dict:
    """A body each route accepts as far as its database: a fresh account for those that make one, a text that
    conflicts with the stored one (a 409 before any run starts) for the routes that save before running."""
    body = dict(ANY_BODY, username=next(FRESH), role="learner")
    if path.endswith(("/run", "/check", "/viz", "/inspect", "/profile")):
        body.update(text="# never saved\n", base_version="0" * 16, force=False)
    return body


def test_every_text_field_of_every_body_is_answered_below_500(server: ClassServer) -> None:
    teacher = server.login("teacher")
    values = server.values(teacher)
    public = {
        "/api/login",
        "/api/join/{code}",
    }  # sent by a visitor (a join logs the client in as the new learner)
    tried: list[str] = []
    with teacher.client:
        for route in api_routes(server.app.routes):
            model = body_model(route)
            if model is None:
                continue
            for method in sorted(route.methods):
                for field, limit in text_fields(model):
                    for what, text in variants(limit).items():
                        body = base_body(route.path)
                        body[field] = text
                        if route.path.startswith(
                            "/api/quiz/"
                        ):  # a fresh attempt: an answered one stops at 409
                            values["attempt_id"] = server.values(teacher)["attempt_id"]
                        url = fill(route.path, values)
                        if route.path in public:
                            r = server.client().request(method, url, json=body, headers={"Origin": BASE})
                        else:
                            r = teacher.request(method, url, json=body)
                        where = f"{method} {route.path}, `{field}` {what}: {r.status_code} {r.text[:200]}"
                        assert r.status_code < 500, where
                        assert "Traceback" not in r.text, where
                        tried.append(f"{route.path}:{field}")
    fields = set(tried)
    # the walk reached the fields that reach the database: a missing one means the walk broke
    for expected in (
        "/api/login:username",
        "/api/join/{code}:display_name",
        "/api/classroom/users:display_name",
        "/api/exercises/{exercise_id}/code:text",
        "/api/exercises/{exercise_id}/backup:text",
        "/api/exercises/{exercise_id}/check:text",
        "/api/leaderboard/name:name",
        "/api/quiz/{attempt_id}/answer:response",
    ):
        assert expected in fields, (expected, sorted(fields))
    assert teacher.get("/api/me").json()["username"] == "teacher"


# ---- secrets beyond ASCII ------------------------------------------------------------------------------------------

BEYOND_ASCII = "é€"


def test_a_class_secret_beyond_ascii_is_refused_not_a_500(server: ClassServer) -> None:
    anna = server.login("anna")
    visitor = server.client()
    code = quote(server.join_code + BEYOND_ASCII, safe="")
    assert visitor.get(f"/join/{code}").status_code == 404
    join = {"username": next(FRESH), "password": "pw-joiner-12345"}
    assert visitor.post(f"/api/join/{code}", json=join, headers={"Origin": BASE}).status_code == 404
    bad_csrf = anna.client.post(
        "/api/exercises/vector-copy/hint",
        headers={"Origin": BASE, "X-CSRF-Token": (anna.csrf + BEYOND_ASCII).encode()},
    )
    assert bad_csrf.status_code == 403 and bad_csrf.json()["reason"] == "csrf"
    session = next(c for c in anna.client.cookies.jar if c.name.startswith("tritonlab_session"))
    forged = server.client().get(
        "/api/me", headers={"Cookie": f"{session.name}={session.value}{BEYOND_ASCII}".encode()}
    )
    assert forged.status_code == 401
    assert anna.get("/api/me").json()["username"] == "anna"  # the control: her own values work


def test_a_token_beyond_ascii_is_refused_not_a_500(single: SingleServer) -> None:
    client = TestClient(single.app, base_url=BASE)
    wrong = TOKEN + BEYOND_ASCII
    assert client.get(f"/?token={quote(wrong, safe='')}").status_code == 401
    assert (
        client.get("/api/progress", headers={"Authorization": f"Bearer {wrong}".encode()}).status_code == 401
    )
    cookie = f"{cookie_name(TOKEN)}={wrong}".encode()
    assert client.get("/api/progress", headers={"Cookie": cookie}).status_code == 401
    assert client.get("/api/progress", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


# ---- a learner's text on every page ----------------------------------------------------------------------------

MARKUP = ("<script>alert", "<img src=x")  # neither may reach a page as markup


def test_a_learners_text_is_text_on_every_page(server: ClassServer) -> None:
    """A learner whose display name, code and leaderboard name are markup: every page (every GET route that
    answers HTML) the teacher and the learner open shows that text escaped."""
    teacher = server.login("teacher")
    hostile = '<script>alert("tl")</script><img src=x onerror=alert(1)>'
    made = teacher.post("/api/classroom/users", json={"username": "mal", "display_name": hostile})
    assert made.status_code == 200, made.text
    server.accounts["mal"], server.ids["mal"] = made.json()["password"], made.json()["id"]
    mal = server.login("mal")
    code = mal.get("/api/exercises/vector-copy/code").json()
    saved = mal.put(
        "/api/exercises/vector-copy/code",
        json={"text": f"# </pre>{hostile}\n{code['text']}", "base_version": code["version"]},
    )
    assert saved.status_code == 200, saved.text
    assert mal.put("/api/leaderboard/name", json={"name": "<img src=x onerror=alert(1)>"}).status_code == 200
    mal_id = server.ids["mal"]
    store = server.room.db.learner(mal_id)  # an attempt with a speed: she is on the matrix and the board
    speed = {"ms": 0.5, "achieved": 1.0, "unit": "GB/s", "gpu": "NVIDIA H200"}
    store.record_attempt(
        {"exercise": "vector-copy", "backend": "gpu", "passed": True, "seed": 1, "speed": speed}
    )
    pages = 0
    for who in (teacher, mal):
        values = server.values(who, user="mal")
        for route in every_route(server.app):
            if "GET" not in route.methods:
                continue
            r = who.get(fill(route.path, values))
            if not r.headers.get("content-type", "").startswith("text/html"):
                continue
            pages += 1
            for mark in MARKUP:
                assert mark not in r.text, (route.path, who.me["username"], mark)
    assert pages >= 8
    # the control: her text is on the teacher's pages, escaped
    assert (
        "&lt;/pre&gt;&lt;script&gt;alert" in teacher.get(f"/teacher/learners/{mal_id}/code/vector-copy").text
    )
    assert "&lt;script&gt;alert" in teacher.get("/teacher").text
