"""Issue 31, rows 1 and 2: no state-changing request gets past the guards of either server without proof that it
came from the server's own pages, whatever the route and whatever the method.

- Classroom (`serve --classroom`): every route the app has (walked from the app, so a new route is covered
  without editing this file) × every state-changing method (POST, PUT, PATCH, DELETE, declared by the route or
  not) sent by a logged-in learner and by the teacher without the X-CSRF-Token header, or with a wrong one,
  is 403 "csrf"; every table of the database and the runs are unchanged afterwards.
- Both servers: an Origin (or, without one, a Referer) that only looks like the server's — a suffix or prefix
  domain, another port, the other scheme, `null`, userinfo, a trailing dot, broken URLs — is 403 on every
  state-changing route and changes nothing; the right origin passes (the control). The classroom is tried as
  reached directly, behind a TLS proxy with `--public-url` (the documented nginx, which does not forward the
  scheme) and behind one that does; the single-user server on each loopback name and behind a TLS proxy.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit

import pytest
from classroom_app import (
    ANY_BODY,
    BASE,
    UNSAFE,
    ClassServer,
    SingleServer,
    behind_proxy,
    class_server,
    database_url,
    every_route,
    fill,
    single_server,
)
from fastapi.testclient import TestClient

from tritonlab.i18n import t
from tritonlab.web.security import cookie_name, cookie_value

CROSS_ORIGIN = t("web.guard.cross_origin_title", "en")
# docs/classroom.md: these two need the Origin only (logging in has no session yet; the language switch only sets
# a cookie). Any other path that stops answering 403 "csrf" fails the test.
CSRF_EXEMPT = {"/api/login", "/settings/lang"}
PUBLIC_UNSAFE = {"/api/login", "/api/join/{code}", "/settings/lang", "/auth/logout"}  # open to a visitor
PUBLIC = "https://class.example.org"
TOKEN = "csrf-origin-token-0123456789abcdef"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassServer]:
    root = tmp_path_factory.mktemp(f"csrf-{request.param}")
    with class_server(root, database_url(request.param, root, request)) as made:
        yield made


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassServer]:
    """The Origin check reads no database: its look-alikes are tried once, on SQLite."""
    root = tmp_path_factory.mktemp("origin")
    with class_server(root, f"sqlite:///{root / 'classroom.db'}") as made:
        yield made


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SingleServer]:
    with single_server(tmp_path_factory.mktemp("csrf-single"), TOKEN) as made:
        yield made


def look_alikes(origin: str) -> dict[str, str]:
    """Origins that are not `origin` but share most of its text: what a prefix, suffix, host-only, port-blind
    or scheme-blind comparison would wrongly accept, and text no browser sends (broken URLs, userinfo)."""
    parts = urlsplit(origin)
    scheme, host, netloc = parts.scheme, parts.hostname or "", parts.netloc
    name = f"[{host}]" if ":" in host else host
    port = f":{parts.port}" if parts.port else ""
    other_scheme = "https" if scheme == "http" else "http"
    if parts.port:
        port_forms = {"no port": f"{scheme}://{name}", "another port": f"{scheme}://{name}:{parts.port + 1}"}
    else:
        port_forms = {"an explicit port": f"{origin}:8", "another port": f"{scheme}://{name}:8443"}
    return {
        **port_forms,
        "suffix domain": f"{scheme}://{name}.evil.example{port}",
        "suffix after the port": f"{scheme}://{netloc}.evil.example",
        "upper-case suffix domain": f"{scheme}://{name}.EVIL.EXAMPLE{port}".upper(),
        "prefix label": f"{scheme}://evil.{netloc}",
        "prefix with a dash": f"{scheme}://evil-{netloc}",
        "glued prefix": f"{scheme}://evil{netloc}",
        "trailing dot": f"{scheme}://{name}.{port}",
        "userinfo, the real host first": f"{scheme}://{netloc}@evil.example",
        "userinfo, the real host after": f"{scheme}://evil.example@{netloc}",
        "backslash and userinfo": f"{scheme}://{netloc}\\@evil.example",
        "percent-encoded dot": f"{scheme}://{name}%2eevil.example{port}",
        "the other scheme": f"{other_scheme}://{netloc}",
        "the port with a digit more": f"{origin}1",
        "the origin less its last character": origin[:-1],
        "null": "null",
        "websocket scheme": f"ws://{netloc}",
        "ftp scheme": f"ftp://{netloc}",
        "file": "file://",
        "scheme-relative": f"//{netloc}",
        "no slashes": f"{scheme}:{netloc}",
        "three slashes": f"{scheme}:///{netloc}",
        "broken IPv6 literal": f"{scheme}://[{host}",
        "bracketed non-address": f"{scheme}://[evil.example]{port}",
        "another site": "http://evil.example",
    }


def refusal(r, origin: str, what: str) -> str:  # noqa: ANN001
    return f"{r.request.method} {r.request.url.path} from {origin!r} ({what}): {r.status_code} {r.text[:200]}"


def unsafe_requests(app, values: dict[str, str]) -> Iterator[tuple[str, str, bool]]:  # noqa: ANN001
    """(method, url, whether the route declares the method) for every route × every state-changing method."""
    for route in every_route(app):
        for method in UNSAFE:
            yield method, fill(route.path, values), method in route.methods


# ---- row 1: the CSRF header (classroom) ----------------------------------------------------------------------


def test_no_state_change_passes_without_the_right_csrf_header(server: ClassServer) -> None:
    """As a learner and as the teacher (who may reach every route): no header, an empty one, another session's
    value, near misses and the session cookie itself are each refused as "csrf" on every route × method."""
    declared = 0
    for who in ("anna", "teacher"):
        browser = server.login(who)
        other = server.login("ben")  # a live session's value that is not this browser's
        values = server.values(browser)
        session_cookie = next(
            c.value for c in browser.client.cookies.jar if c.name.startswith("tritonlab_session")
        )
        wrong = {
            "no header": None,
            "empty": "",
            "another session's value": other.csrf,
            "a prefix of the value": browser.csrf[:-1],
            "the value and one character more": browser.csrf + "0",
            "the value in another case": browser.csrf.swapcase(),
            "the session cookie": session_cookie,
        }
        # every variant where the route takes the method; for the teacher (the same check) the two a mutation
        # would most likely let through; where the route does not take the method (the guard answers before
        # the router), those two for the learner
        few = {k: wrong[k] for k in ("no header", "another session's value")}
        before = server.snapshot()
        with browser.client:  # one event loop for all the requests (the app's lifespan runs again)
            for method, url, is_declared in unsafe_requests(server.app, values):
                if url in CSRF_EXEMPT:
                    continue
                declared += is_declared
                if not is_declared and who != "anna":
                    continue
                for what, value in (wrong if is_declared and who == "anna" else few).items():
                    headers = {"Origin": BASE} if value is None else {"Origin": BASE, "X-CSRF-Token": value}
                    r = browser.client.request(
                        method, url, json=ANY_BODY, headers=headers, follow_redirects=False
                    )
                    assert r.status_code == 403 and r.json().get("reason") == "csrf", refusal(r, BASE, what)
                    assert "set-cookie" not in r.headers, refusal(r, BASE, what)
        assert server.snapshot() == before, f"a request without the right X-CSRF-Token changed state as {who}"
        assert browser.get("/api/me").json()["username"] == who  # still logged in: logout was refused too
    assert declared >= 2 * 20  # the walk found the app's state-changing routes (POST and PUT), per account


def test_the_right_csrf_header_passes_on_post_and_put(server: ClassServer) -> None:
    """The control: the refusals above come from the header, not from the made-up requests."""
    anna, teacher = server.login("anna"), server.login("teacher")
    code = anna.get("/api/exercises/vector-copy/code").json()
    before = server.snapshot()
    saved = anna.put(
        "/api/exercises/vector-copy/code", json={"text": "# mine\n", "base_version": code["version"]}
    )
    assert saved.status_code == 200, saved.text
    assert anna.post("/api/exercises/vector-copy/hint").status_code == 200
    assert teacher.post(f"/api/classroom/users/{server.ids['ben']}/unlock").status_code == 200
    assert server.snapshot() != before
    # the exempt two: a visitor's language switch, and logging in again, need only the Origin
    fresh = server.client()
    assert fresh.post("/settings/lang", data={"lang": "pt"}, headers={"Origin": BASE}).status_code in (
        200,
        303,
    )
    again = anna.client.post(
        "/api/login",
        json={"username": "anna", "password": server.accounts["anna"]},
        headers={"Origin": BASE},
    )
    assert again.status_code == 200


# ---- row 2: the Origin check, both servers ----------------------------------------------------------------------

# A look-alike a prefix comparison (startswith) accepts, one a host-only comparison accepts, the other scheme, and
# `null`: tried on every route × method. The whole list is tried on the routes in FULL_ROUTES (the check is one
# piece of middleware, before the router: what it compares is the same for every route; whether it runs is not).
FEW = ("userinfo, the real host first", "suffix domain", "the other scheme", "null")
FULL_ROUTES = {
    ("PUT", "/api/exercises/{exercise_id}/code"): 3,  # how many forms: Origin, Referer, both
    ("POST", "/api/classroom/users/{user_id}/disabled"): 3,
    ("POST", "/api/join/{code}"): 1,
    ("POST", "/settings/lang"): 1,  # a page, not the API: refused with the HTML page
}


def origin_cases(
    app,
    values: dict[str, str],
    origin: str,
    undeclared: bool = True,  # noqa: ANN001
) -> Iterator[tuple[str, str, dict, str]]:
    """(method, url, headers, what) for every route × state-changing method of `app`: no Origin or Referer,
    the FEW look-alikes as the Origin, the first as the Referer too; the whole list on FULL_ROUTES. Where the
    route does not take the method (`undeclared`), only the request without an Origin: the check must run."""
    alikes = look_alikes(origin)
    right = f"{origin}/lessons/01-intro"
    for route in every_route(app):
        url = fill(route.path, values)
        for method in UNSAFE:
            if method not in route.methods:
                if undeclared:
                    yield method, url, {}, "neither Origin nor Referer (a method the route does not take)"
                continue
            yield method, url, {}, "neither Origin nor Referer"
            forms = FULL_ROUTES.get((method, route.path), 0)
            for what in alikes if forms else FEW:
                bad = alikes[what]
                yield method, url, {"Origin": bad}, what
                if forms > 1 or what == FEW[0]:
                    yield method, url, {"Referer": f"{bad}/lessons/01-intro"}, f"Referer {what}"
                if forms > 2:
                    yield method, url, {"Origin": bad, "Referer": right}, f"{what}, with the right Referer"


def assert_refused(client: TestClient, cases: Iterable[tuple[str, str, dict, str]], extra: dict) -> int:
    tried = 0
    for method, url, headers, what in cases:
        r = client.request(method, url, json=ANY_BODY, headers={**extra, **headers}, follow_redirects=False)
        assert r.status_code == 403 and CROSS_ORIGIN in r.text, refusal(r, headers.get("Origin", ""), what)
        assert "set-cookie" not in r.headers, refusal(r, headers.get("Origin", ""), what)
        tried += 1
    return tried


def assert_classroom_refuses_look_alikes(
    server: ClassServer,
    app,
    origin: str,
    via=None,
    undeclared: bool = True,  # noqa: ANN001
) -> int:
    """Every case of `origin_cases` from the teacher (with the right CSRF header: only the Origin is wrong)
    and, on the routes open to visitors, from a visitor: 403 "cross-origin", nothing changed. The right origin
    itself is the control. `via`: the app as reached through a proxy."""
    teacher = server.login("teacher", base=origin, app=via or app)
    visitor = server.client(origin, app=via or app)
    values = server.values(teacher)
    public = {fill(p, values) for p in PUBLIC_UNSAFE}
    before = server.snapshot()
    with teacher.client, visitor:  # one event loop for all the requests (the app's lifespan runs again)
        cases = origin_cases(app, values, origin, undeclared)
        tried = assert_refused(teacher.client, cases, {"X-CSRF-Token": teacher.csrf})
        visiting = (c for c in origin_cases(app, values, origin) if c[1] in public)
        tried += assert_refused(visitor, visiting, {})
    assert server.snapshot() == before, f"a look-alike of {origin} changed state"
    assert teacher.get("/api/me").status_code == 200
    # the control: the right origin passes, as the Origin and as the Referer, for the teacher and a visitor
    unlock = f"/api/classroom/users/{server.ids['ben']}/unlock"
    assert teacher.post(unlock).status_code == 200
    assert teacher.post(unlock, headers={"Origin": "", "Referer": f"{origin}/teacher"}).status_code == 200
    login = {"username": "ben", "password": server.accounts["ben"]}
    assert visitor.post("/api/login", json=login, headers={"Origin": origin}).status_code == 200
    return tried


def test_look_alike_origins_are_refused_by_the_classroom(sqlite_server: ClassServer) -> None:
    assert assert_classroom_refuses_look_alikes(sqlite_server, sqlite_server.app, BASE) > 250


@pytest.mark.parametrize(
    "arrives_as",
    [
        "http",  # the documented nginx: TLS ends at the proxy, which forwards the Host but not the scheme
        "https",  # a proxy that forwards the scheme (X-Forwarded-Proto, believed from --trusted-proxy)
    ],
)
def test_look_alike_origins_are_refused_behind_a_tls_proxy(
    sqlite_server: ClassServer, arrives_as: str
) -> None:
    """With --public-url https://class.example.org only that origin is the class's under its name: http://
    of the same name (a page a network attacker can serve) is a look-alike like the others."""
    app = sqlite_server.another_app(public_url=PUBLIC)
    proxied = behind_proxy(app, arrives_as)
    assert assert_classroom_refuses_look_alikes(sqlite_server, app, PUBLIC, proxied, undeclared=False) > 150


@pytest.mark.parametrize(
    "base", ["http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000", "https://127.0.0.1:8000"]
)
def test_look_alike_origins_are_refused_by_the_single_user_server(single: SingleServer, base: str) -> None:
    """Signed in by the cookie (what a cross-site page can make a browser send): no Origin, or a look-alike
    as the Origin or the Referer, is refused on every route × method, and nothing changes. The last base is
    the server behind a TLS proxy that forwards the scheme: there http:// of the same host is a look-alike."""
    client = TestClient(single.app, base_url=base)
    client.cookies.set(cookie_name(TOKEN), cookie_value(TOKEN))
    lesson = client.get("/lessons/01-intro")
    assert lesson.status_code == 200
    values = {"exercise_id": "vector-copy", "lesson_key": "01-intro", "key": "01-intro", "index": "0"}
    values["attempt_id"] = lesson.text.split('data-attempt="', 1)[1].split('"', 1)[0]
    before = single.snapshot()
    with client:
        cases = origin_cases(single.app, values, base, undeclared=base == BASE)
        assert assert_refused(client, cases, {}) > 80
    assert single.snapshot() == before, f"a look-alike of {base} changed the single-user server's state"
    # the controls: the right origin passes with the cookie; the Bearer token needs no Origin (a browser never
    # adds that header across sites)
    code = client.get("/api/exercises/vector-copy/code").json()
    put = client.put(
        "/api/exercises/vector-copy/code",
        json={"text": code["text"], "base_version": code["version"]},
        headers={"Origin": base},
    )
    assert put.status_code == 200, put.text
    bearer = client.post("/api/exercises/vector-copy/hint", headers={"Authorization": f"Bearer {TOKEN}"})
    assert bearer.status_code == 200, bearer.text
