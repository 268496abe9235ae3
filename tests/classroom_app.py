"""An in-process `serve --classroom` (and the single-user server) for the web tests of issue 31: a fixture course,
a class with a teacher and two learners, a browser-like client per account, every route of the app found by
walking the app itself (so a route added later is covered without editing a test), and a snapshot of
everything a request could change: every row of every table of the database, the runs and the quiz attempts.

The database is SQLite or the test session's PostgreSQL (`tests/classroom_pg.py`), chosen by the caller."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from starlette.routing import Mount
from test_web_api import make_course

from tritonlab.classroom.room import Classroom
from tritonlab.service import Service
from tritonlab.web import create_app

BASE = "http://127.0.0.1:8000"
UNSAFE = ("POST", "PUT", "PATCH", "DELETE")
LEARNERS = ("anna", "ben")
# One JSON body that every state-changing route accepts (each takes the fields it knows, pydantic ignores the
# rest), so that a request the guard wrongly lets through really changes something the snapshot sees.
ANY_BODY = {
    "text": "# written by a cross-site request\n",
    "base_version": None,
    "force": True,
    "question": "mask",
    "response": 0,
    "username": "mallory",
    "password": "pw-mallory-1234",
    "display_name": "Mallory",
    "role": "teacher",
    "value": True,
    "name": "Mallory",
}


def database_url(backend: str, folder: Path, request: pytest.FixtureRequest) -> str:
    """A fresh, empty classroom database: a SQLite file in `folder`, or a new database on the session's
    PostgreSQL server (one server per test session, one database per caller)."""
    if backend == "sqlite":
        return f"sqlite:///{folder / 'classroom.db'}"
    return request.getfixturevalue("postgres").new_database()


@dataclass(frozen=True)
class Route:
    path: str  # the template, e.g. /api/exercises/{exercise_id}/code
    methods: frozenset[str]


def every_route(app) -> list[Route]:  # noqa: ANN001
    """Every route and mount of the app, through included routers (newer FastAPI keeps them nested)."""
    found: list[Route] = []

    def walk(routes: list, prefix: str) -> None:
        for route in routes:
            if hasattr(route, "original_router"):
                walk(route.original_router.routes, prefix + route.include_context.prefix)
            elif isinstance(route, Mount):
                found.append(Route(prefix + route.path + "/app.js", frozenset({"GET"})))
            else:
                methods = frozenset(getattr(route, "methods", None) or {"GET"}) - {"HEAD"}
                found.append(Route(prefix + route.path, methods))

    walk(app.routes, "")
    return found


def fill(path: str, values: dict[str, str]) -> str:
    """The template with each {parameter} replaced by values[parameter] ("x" when not given)."""
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values.get(m.group(1), "x"), path)


def rows_of(engine: sa.Engine, leave_out: dict[str, set[str]] | None = None) -> dict[str, list[tuple]]:
    """Every row of every table the database holds (found by reflection, not from our schema module), sorted;
    `leave_out` names columns that change without meaning a state change (a session's last_seen)."""
    leave_out = leave_out or {}
    meta = sa.MetaData()
    meta.reflect(engine)
    out: dict[str, list[tuple]] = {}
    with engine.connect() as conn:
        for name, table in sorted(meta.tables.items()):
            cols = [c for c in table.columns if c.name not in leave_out.get(name, set())]
            out[name] = sorted((tuple(r) for r in conn.execute(sa.select(*cols))), key=repr)
    return out


def behind_proxy(app, scheme: str = "http"):  # noqa: ANN001, ANN201
    """The app as it is reached through a TLS-terminating proxy: the browser speaks https to the proxy, the
    app sees each request arrive as `scheme` (the documented nginx forwards the Host, not the scheme)."""

    async def proxied(scope, receive, send) -> None:  # noqa: ANN001
        if scope["type"] == "http":
            scope = {**scope, "scheme": scheme}
        await app(scope, receive, send)

    return proxied


class As:
    """A browser logged in as one account: its cookies, and the headers a page sends on a state change."""

    def __init__(
        self,
        server: ClassServer,
        username: str,
        base: str = BASE,
        origin: str | None = None,
        app=None,  # noqa: ANN001
    ) -> None:
        self.base, self.origin, self.app = base, origin or base, app or server.app
        self.client = TestClient(self.app, base_url=base)
        r = self.client.post(
            "/api/login",
            json={"username": username, "password": server.accounts[username]},
            headers={"Origin": self.origin},
        )
        assert r.status_code == 200, r.text
        self.me = r.json()
        self.csrf = self.me["csrf"]
        self.headers = {"Origin": self.origin, "X-CSRF-Token": self.csrf}

    def request(self, method: str, path: str, **kw):  # noqa: ANN003, ANN201
        headers = {**self.headers, **kw.pop("headers", {})}
        return self.client.request(method, path, headers=headers, follow_redirects=False, **kw)

    def get(self, path: str, **kw):  # noqa: ANN003, ANN201
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw):  # noqa: ANN003, ANN201
        return self.request("POST", path, **kw)

    def put(self, path: str, **kw):  # noqa: ANN003, ANN201
        return self.request("PUT", path, **kw)

    def kept_copy(self, server: ClassServer) -> TestClient:
        """Another client holding this browser's cookies as they are now (what a thief keeps)."""
        copy = TestClient(self.app, base_url=self.base)
        for cookie in self.client.cookies.jar:
            copy.cookies.set(cookie.name, cookie.value)
        return copy


@dataclass
class ClassServer:
    app: object
    service: Service
    room: Classroom
    accounts: dict[str, str]
    join_code: str
    root: Path
    ids: dict[str, int] = field(default_factory=dict)
    apps: list = field(default_factory=list)  # every app made over this class (another --public-url, ...)

    def login(self, username: str, base: str = BASE, origin: str | None = None, app=None) -> As:  # noqa: ANN001
        return As(self, username, base, origin, app)

    def client(self, base: str = BASE, app=None) -> TestClient:  # noqa: ANN001
        return TestClient(app or self.app, base_url=base)

    def another_app(self, **options: object):  # noqa: ANN201
        """The same class and service served again, e.g. behind a proxy with `public_url=`."""
        app = create_app(self.service, "unused-token-0123456789", classroom=self.room, **options)
        self.apps.append(app)
        return app

    def snapshot(self) -> dict:
        """Everything a request can change: every table (a session's last_seen aside), every app's runs."""
        return {
            "database": rows_of(self.room.db.engine, {"sessions": {"last_seen"}}),
            "runs": [sorted(app.state.jobs._jobs) for app in (self.app, *self.apps)],
        }

    def values(self, who: As, user: str = "ben") -> dict[str, str]:
        """Real values for a route's parameters, so that a request let through would act on real things."""
        lesson = who.get("/lessons/01-intro").text
        attempt = re.search(r'data-attempt="([^"]+)"', lesson)
        return {
            "exercise_id": "vector-copy",
            "lesson_key": "01-intro",
            "key": "01-intro",
            "index": "0",
            "name": "dot.png",
            "attempt_id": attempt.group(1) if attempt else "x",
            "user_id": str(self.ids[user]),
            "code": self.join_code,
            "job_id": "0123456789abcdef",
        }


@contextmanager
def class_server(root: Path, url: str, **app_options: object) -> Iterator[ClassServer]:
    """The classroom app over a two-lesson course and the database at `url` (empty): class "Test class",
    the teacher, and the learners anna and ben. TRITONLAB_HOME points into `root` while it is open."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TRITONLAB_HOME", str(root / "home"))
        env.setenv("TRITONLAB_BACKEND", "interpreter")
        env.delenv("TRITONLAB_LANG", raising=False)
        service = Service(course_dir=make_course(root), workspace_dir=root / "ws", lang="en")
        room = Classroom(url, adopt=Path("/nonexistent"))
        try:
            made = room.init("Test class")
            accounts = {"teacher": made["teacher"]["password"]}
            for name in LEARNERS:
                accounts[name] = room.add(name, name.title())[1]
            app = create_app(service, "unused-token-0123456789", classroom=room, **app_options)
            server = ClassServer(app, service, room, accounts, made["join_path"].rsplit("/", 1)[1], root)
            server.ids = {u.username: u.id for u in room.users()}
            with TestClient(app, base_url=BASE):  # runs the app's lifespan (stops runs at the end)
                yield server
        finally:
            service.close()
            room.close()


# ---- the single-user server -------------------------------------------------------------------------------


@dataclass
class SingleServer:
    app: object
    service: Service
    token: str
    home: Path
    workspace: Path

    def snapshot(self) -> dict:
        """The progress database (every table), every file of the workspace, the runs."""
        tables: dict[str, list[tuple]] = {}
        for db in sorted([*self.home.glob("*.db"), *self.home.glob("*.sqlite3")]):
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
                for name in sorted(names):
                    rows = conn.execute(f'SELECT * FROM "{name}"').fetchall()
                    tables[f"{db.name}:{name}"] = sorted(rows, key=repr)
        files = {
            str(p.relative_to(self.workspace)): p.read_bytes()
            for p in sorted(self.workspace.rglob("*"))
            if p.is_file()
        }
        return {"database": tables, "files": files, "runs": sorted(self.app.state.jobs._jobs)}


@contextmanager
def single_server(root: Path, token: str) -> Iterator[SingleServer]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TRITONLAB_HOME", str(root / "home"))
        env.setenv("TRITONLAB_BACKEND", "interpreter")
        env.delenv("TRITONLAB_LANG", raising=False)
        service = Service(course_dir=make_course(root), workspace_dir=root / "ws", lang="en")
        service.init_workspace()
        try:
            app = create_app(service, token)
            with TestClient(app, base_url=BASE):
                yield SingleServer(app, service, token, Path(os.environ["TRITONLAB_HOME"]), root / "ws")
        finally:
            service.close()
