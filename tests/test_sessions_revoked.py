"""Issue 31, row 3: ending a session ends it on the server, not only in the browser. A client that KEPT the
session cookie (and the CSRF value) from before is refused afterwards on every route a learner uses — walked
from the app, so a new route is covered without editing this file — after logging out, after the teacher (or
`tritonlab classroom reset-password`) resets the password, after the account is disabled (also once it is
enabled again), and after the same browser logs in again. Its requests change nothing. Before the revocation the
same copy works (the control). And what must not end a session does not: a restart of the server.
On SQLite and on the test session's PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from classroom_app import ANY_BODY, BASE, As, ClassServer, class_server, database_url, every_route, fill
from fastapi.testclient import TestClient

from tritonlab.classroom.room import Classroom
from tritonlab.web import create_app

# What a visitor without a session may open (docs/classroom.md); every other route needs a live session.
PUBLIC = {"/login", "/api/login", "/join/{code}", "/api/join/{code}", "/settings/lang", "/static/app.js"}
PUBLIC |= {
    "/auth/start",
    "/auth/callback",
    "/auth/logout",
}  # a provider's log-in, and logout (web/classroom/oidc.py)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassServer]:
    root = tmp_path_factory.mktemp(f"revoked-{request.param}")
    with class_server(root, database_url(request.param, root, request)) as made:
        yield made


def session_routes(server: ClassServer) -> list[tuple[str, str]]:
    """(method, template) of every route that needs a session, all methods each route takes."""
    routes = every_route(server.app)
    paths = {r.path for r in routes}
    assert PUBLIC <= paths, PUBLIC - paths  # the public list names real routes
    found = [(m, r.path) for r in routes if r.path not in PUBLIC for m in sorted(r.methods)]
    assert len(found) >= 30, found
    return found


def assert_refused_everywhere(
    server: ClassServer, kept: TestClient, csrf: str, values: dict[str, str]
) -> None:
    """Every route that needs a session answers the kept cookie as it answers a visitor: 401 on the API (and
    any state change), a redirect to the log-in page for a page; and nothing changes."""
    before = without_sessions(server.snapshot())
    with kept:
        for method, template in session_routes(server):
            url = fill(template, values)
            r = kept.request(
                method,
                url,
                json=ANY_BODY if method != "GET" else None,
                headers={"Origin": BASE, "X-CSRF-Token": csrf},
                follow_redirects=False,
            )
            where = f"{method} {url} with a kept cookie: {r.status_code} {r.text[:200]}"
            if url.startswith("/api/") or method != "GET":
                assert r.status_code == 401, where
            else:
                assert r.status_code == 303 and r.headers["location"].startswith("/login"), where
    assert without_sessions(server.snapshot()) == before


def without_sessions(snapshot: dict) -> dict:
    """A refused request may delete the dead session's row (the lookup cleans up lazily); nothing else."""
    return {**snapshot, "database": {k: v for k, v in snapshot["database"].items() if k != "sessions"}}


def keep_and_revoke(server: ClassServer, revoke: Callable[[As], None]) -> tuple[TestClient, str, dict]:
    """anna logs in; a copy of her cookies is kept; `revoke` ends her session; the copy is refused everywhere.
    Returns (the copy, its CSRF value, the route values) for further checks."""
    anna = server.login("anna")
    values = server.values(anna)
    kept = anna.kept_copy(server)
    assert kept.get("/api/me").json()["username"] == "anna"  # the control: the copy works before
    code = kept.get("/api/exercises/vector-copy/code")
    assert code.status_code == 200 and code.json()["text"]
    hint = kept.post("/api/exercises/vector-copy/hint", headers={"Origin": BASE, "X-CSRF-Token": anna.csrf})
    assert hint.status_code == 200, hint.text
    revoke(anna)
    assert_refused_everywhere(server, kept, anna.csrf, values)
    return kept, anna.csrf, values


def test_a_kept_cookie_is_refused_after_logout(server: ClassServer) -> None:
    def logout(anna: As) -> None:
        r = anna.post("/api/logout")
        assert r.status_code == 200 and r.json() == {"logged_out": True}

    keep_and_revoke(server, logout)


def test_a_kept_cookie_is_refused_after_the_teacher_resets_the_password(server: ClassServer) -> None:
    teacher = server.login("teacher")

    def reset(anna: As) -> None:
        r = teacher.post(f"/api/classroom/users/{server.ids['anna']}/password")
        assert r.status_code == 200, r.text
        server.accounts["anna"] = r.json()["password"]

    keep_and_revoke(server, reset)
    assert server.login("anna").get("/api/me").status_code == 200  # the new password works


def test_a_kept_cookie_is_refused_after_a_reset_password_from_the_command_line(server: ClassServer) -> None:
    def reset(anna: As) -> None:  # what `tritonlab classroom reset-password anna` calls
        server.accounts["anna"] = server.room.reset_password(server.room.user("anna"))

    keep_and_revoke(server, reset)


def test_a_kept_cookie_is_refused_after_the_learner_is_disabled_and_stays_so_once_enabled(
    server: ClassServer,
) -> None:
    teacher = server.login("teacher")
    flag = f"/api/classroom/users/{server.ids['anna']}/disabled"
    ben = server.login("ben").kept_copy(server)

    def disable(anna: As) -> None:
        assert teacher.post(flag, json={"value": True}).status_code == 200

    kept, csrf, values = keep_and_revoke(server, disable)
    assert teacher.post(flag, json={"value": False}).status_code == 200  # enabled again
    assert_refused_everywhere(server, kept, csrf, values)  # the old session does not come back
    assert server.login("anna").get("/api/me").json()["username"] == "anna"  # a new log-in works
    assert ben.get("/api/me").json()["username"] == "ben"  # another learner's session was never touched


@pytest.mark.parametrize("as_whom", ["anna", "ben"])
def test_a_kept_cookie_is_refused_after_the_browser_logs_in_again(server: ClassServer, as_whom: str) -> None:
    """A shared computer: anna's browser logs in again (as anna, or as ben without logging anna out). The session
    it had ends on the server, so a copy of anna's old cookie opens nothing."""

    def log_in_again(anna: As) -> None:
        r = anna.client.post(
            "/api/login",
            json={"username": as_whom, "password": server.accounts[as_whom]},
            headers={"Origin": BASE},
        )
        assert r.status_code == 200 and r.json()["username"] == as_whom, r.text

    keep_and_revoke(server, log_in_again)


def test_a_restart_keeps_every_session(server: ClassServer) -> None:
    """The server stops and starts again over the same database (a new Classroom and app, as `serve --classroom`
    makes them): a learner's browser is still logged in, with the same CSRF value, and its run folder is the same."""
    anna = server.login("anna")
    folder = server.room.run_folder(server.room.user("anna"))
    again = Classroom(str(server.room.db.url), adopt=server.root / "no-legacy.db")
    try:
        app = create_app(server.service, "unused-token-0123456789", classroom=again)
        browser = TestClient(app, base_url=BASE)
        for cookie in anna.client.cookies.jar:
            browser.cookies.set(cookie.name, cookie.value)
        with browser:
            me = browser.get("/api/me")
            assert me.status_code == 200 and me.json()["username"] == "anna", me.text
            hint = browser.post("/api/exercises/vector-copy/hint", headers=anna.headers)
            assert hint.status_code == 200, hint.text
        assert again.run_folder(again.user("anna")) == folder
    finally:
        again.close()
