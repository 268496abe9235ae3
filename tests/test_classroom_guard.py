"""The classroom guard's other promises (issue 31's held-out mutations found each one untested), on every route of
the app (walked from the app itself, so a new route is covered without editing this file):

- the Host header: any host the class is not served under is refused (403) before anything else, logged in or
  not — DNS rebinding cannot reach a learner's data — and under `--public-url` its host is served;
- request bodies: past the cap (also sent chunked, without Content-Length) a 413 that says the limit, and JSON
  nested too deep a 422 that says the depth, never FastAPI's bare 400; nothing changes;
- `next=` (the log-in page, the language switch of both servers) only ever leads to a path of this server: a
  backslash, a tab or newline (which a browser reads as `//host`), a scheme or `//` sends the browser to `/`;
- behind an https `--public-url` the session and CSRF cookies are `Secure` whether or not the proxy forwards the
  scheme (the documented nginx does not).

On SQLite and on the test session's PostgreSQL."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from urllib.parse import quote, unquote

import pytest
from classroom_app import (
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
from tritonlab.web.security import MAX_JSON_DEPTH, cookie_name, cookie_value

PUBLIC = "https://class.example.org"
TOKEN = "guard-token-0123456789abcdef"
HOST_REFUSED = t("web.guard.host_title", "en")
PUBLIC_UNSAFE = {"/api/login", "/api/join/{code}", "/settings/lang"}  # state changes a visitor may send


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassServer]:
    root = tmp_path_factory.mktemp(f"guard-{request.param}")
    with class_server(root, database_url(request.param, root, request)) as made:
        yield made


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SingleServer]:
    with single_server(tmp_path_factory.mktemp("guard-single"), TOKEN) as made:
        yield made


def requests_of(app, values: dict[str, str]) -> Iterator[tuple[str, str, str]]:  # noqa: ANN001
    """(method, url, template) for every route × every method it takes."""
    for route in every_route(app):
        for method in sorted(route.methods):
            yield method, fill(route.path, values), route.path


# ---- the Host header -----------------------------------------------------------------------------------------

BAD_HOSTS = (
    "evil.example",
    "evil.example:8000",
    "127.0.0.1.evil.example:8000",
    "localhost.evil.example",
    "127.0.0.2:8000",  # loopback, but not a name the server was started for
    "[::2]:8000",
    "127.0.0.1:8000@evil.example",
    "class.example.org",  # another deployment's public name: not this server's
    "",
)


def test_every_route_refuses_a_host_it_is_not_served_under(server: ClassServer) -> None:
    """Logged in (the right cookie, CSRF header and Origin) and as a visitor, every route × method it takes
    with a Host the class is not served under is 403 "host not allowed", and nothing changes."""
    teacher = server.login("teacher")
    values = server.values(teacher)
    visitor = server.client()
    before = server.snapshot()
    tried = 0
    with teacher.client, visitor:
        for method, url, _ in requests_of(server.app, values):
            for host in BAD_HOSTS:
                for who, client, extra in (
                    ("the teacher", teacher.client, teacher.headers),
                    ("a visitor", visitor, {"Origin": BASE}),
                ):
                    r = client.request(
                        method,
                        url,
                        json={"value": True} if method != "GET" else None,
                        headers={**extra, "Host": host},
                        follow_redirects=False,
                    )
                    where = f"{method} {url} with Host {host!r} from {who}: {r.status_code} {r.text[:200]}"
                    assert r.status_code == 403 and HOST_REFUSED in r.text, where
                    assert "set-cookie" not in r.headers, where
                    tried += 1
    assert tried > 500
    assert server.snapshot() == before
    # the controls: the Host the class is served under passes; under --public-url, its name does too
    assert teacher.get("/api/me", headers={"Host": "127.0.0.1:8000"}).status_code == 200
    behind = server.another_app(public_url=PUBLIC)
    proxied = TestClient(behind_proxy(behind, "http"), base_url=PUBLIC)
    assert proxied.get("/login").status_code == 200
    assert proxied.get("/login", headers={"Host": "class.example.org.evil.example"}).status_code == 403


# ---- request bodies --------------------------------------------------------------------------------------------


def three_mib() -> Iterator[bytes]:
    """A generator body: sent chunked, without Content-Length, 1 MiB past the 2 MiB cap."""
    for _ in range(48):
        yield b"x" * (1 << 16)


def test_every_route_refuses_oversized_and_deeply_nested_bodies_clearly(server: ClassServer) -> None:
    """Every state-changing route × method it takes, from the teacher (who may reach all of them) and, on the
    routes open to visitors, from a visitor: 3 MiB sent chunked and 3 MiB announced are 413 naming the cap; JSON
    nested 100,000 deep is 422 naming the depth. Nothing changes."""
    teacher = server.login("teacher")
    values = server.values(teacher)
    visitor = server.client()
    public = {fill(p, values) for p in PUBLIC_UNSAFE}
    nested = b"[" * 100_000 + b"]" * 100_000
    before = server.snapshot()
    tried = 0
    with teacher.client, visitor:
        for method, url, _ in requests_of(server.app, values):
            if method not in UNSAFE:
                continue
            senders = [("the teacher", teacher.client, teacher.headers)]
            if url in public:
                senders.append(("a visitor", visitor, {"Origin": BASE}))
            for who, client, extra in senders:
                json_type = {**extra, "Content-Type": "application/json"}
                for what, body, headers, status, says in (
                    ("3 MiB chunked", three_mib(), json_type, 413, "2048 KiB"),
                    ("3 MiB announced", b"x" * (3 << 20), json_type, 413, "2048 KiB"),
                    ("JSON 100,000 deep", nested, json_type, 422, f"{MAX_JSON_DEPTH} levels"),
                ):
                    r = client.request(method, url, content=body, headers=headers, follow_redirects=False)
                    where = f"{method} {url}, {what}, from {who}: {r.status_code} {r.text[:200]}"
                    assert r.status_code == status and says in r.text, where
                    tried += 1
    assert tried >= 3 * 20
    assert server.snapshot() == before
    # the control: a body under the cap, as the page sends it, passes
    assert teacher.post(f"/api/classroom/users/{server.ids['ben']}/unlock", json={}).status_code == 200


# ---- where next= may lead ---------------------------------------------------------------------------------------

# A browser treats a backslash as a slash and drops tabs and newlines anywhere in a URL: each of these would
# leave the server. Every one must be replaced by "/".
LEAVING = {
    "scheme-relative": "//evil.example/",
    "a backslash": "/\\evil.example/",
    "two backslashes": "\\\\evil.example/",
    "slash, backslash, slash": "/\\/evil.example/",
    "a tab": "/\t/evil.example/",
    "a newline": "/\n/evil.example/",
    "a carriage return": "/\r/evil.example/",
    "a NUL": "/\x00/evil.example/",
    "a DEL": "/\x7f/evil.example/",
    "an absolute URL": "http://evil.example/",
    "a scheme without slashes": "https:evil.example",
    "javascript:": "javascript:alert(1)",
    "a space first": " //evil.example/",
    "nothing": "",
}
STAYING = ("/", "/lessons/01-intro", "/lessons/01-intro?x=1", "/teacher", "/leaderboard")


def login_page_next(client: TestClient, target: str) -> str:
    page = client.get(f"/login?next={quote(target, safe='')}")
    assert page.status_code == 200, page.text[:200]
    return html.unescape(re.search(r'data-next="([^"]*)"', page.text).group(1))


def language_switch_next(client: TestClient, target: str) -> str:
    r = client.post(
        "/settings/lang",
        content=f"lang=en&next={quote(target, safe='')}",
        headers={"Origin": BASE, "Content-Type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text[:200]
    return unquote(r.headers["location"])


def test_next_only_leads_to_a_path_of_the_class(server: ClassServer) -> None:
    """The log-in page (its `data-next`, where classroom.js goes after logging in) and the language switch."""
    visitor = server.client()
    for where in (login_page_next, language_switch_next):
        for what, target in LEAVING.items():
            assert where(visitor, target) == "/", f"{where.__name__}: {what} ({target!r})"
        for target in STAYING:  # the control: a path of this server is kept as it is
            assert where(visitor, target) == target, f"{where.__name__}: {target!r}"


def test_next_only_leads_to_a_path_of_the_single_user_server(single: SingleServer) -> None:
    client = TestClient(single.app, base_url=BASE)
    client.cookies.set(cookie_name(TOKEN), cookie_value(TOKEN))
    for what, target in LEAVING.items():
        assert language_switch_next(client, target) == "/", f"{what} ({target!r})"
    for target in STAYING:
        assert language_switch_next(client, target) == target


# ---- cookies behind a TLS proxy --------------------------------------------------------------------------------


@pytest.mark.parametrize("arrives_as", ["http", "https"])
def test_session_cookies_are_secure_behind_an_https_public_url(server: ClassServer, arrives_as: str) -> None:
    """The documented nginx ends TLS and forwards plain http without the scheme; a proxy may forward it. Either
    way the cookies of a log-in, a join and a log-out are Secure (the browser never sends them over http)."""
    app = behind_proxy(server.another_app(public_url=PUBLIC), arrives_as)
    browser = TestClient(app, base_url=PUBLIC)
    headers = {"Origin": PUBLIC}
    responses = {
        "log-in": browser.post(
            "/api/login", json={"username": "ben", "password": server.accounts["ben"]}, headers=headers
        ),
    }
    responses["log-out"] = browser.post(
        "/api/logout", headers={**headers, "X-CSRF-Token": responses["log-in"].json()["csrf"]}
    )
    responses["join"] = TestClient(app, base_url=PUBLIC).post(
        f"/api/join/{server.join_code}",
        json={"username": f"secure-{arrives_as}", "password": "pw-secure-12345"},
        headers=headers,
    )
    for what, r in responses.items():
        assert r.status_code == 200, (what, r.text)
        cookies = [c for c in r.headers.get_list("set-cookie") if c.startswith("tritonlab_")]
        names = {c.split("=", 1)[0] for c in cookies}
        assert "tritonlab_csrf" in names and any(n.startswith("tritonlab_session") for n in names), (
            what,
            names,
        )
        for cookie in cookies:
            assert "; Secure" in cookie, (what, arrives_as, cookie)
