"""Forwarded headers are believed only from configured proxies (issue 34, item 4).

The middleware itself (web/proxy.py) on ASGI scopes, then two real `serve --classroom` processes: one with no
proxy configured (the default), where a client on 127.0.0.1 rotating `X-Forwarded-For` must stay under one
log-in back-off (uvicorn alone believes the header from 127.0.0.1), and one with `--trusted-proxy 127.0.0.2`,
where the back-off is keyed on the forwarded address from that proxy and on the peer address from anyone
else. The database's `login_failures` rows show which address each failure was counted against."""

from __future__ import annotations

import asyncio
import ipaddress
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from classroom_server import ClassroomServer, classroom_env, client_from, log_in, make_class

from tritonlab.web.proxy import TrustedProxies, parse_networks

FREE_TRIES = 5  # classroom/auth.py; written here, not imported: the test states the promise


def seen_by_app(trusted: str, peer: str, headers: list[tuple[str, str]], scheme: str = "http") -> dict:
    """What the app behind TrustedProxies sees for one request: its client, scheme and headers."""
    seen: dict = {}

    async def app(scope, receive, send) -> None:  # noqa: ANN001
        seen.update(client=scope["client"], scheme=scope["scheme"], headers=scope["headers"])

    scope = {
        "type": "http",
        "scheme": scheme,
        "client": (peer, 41000),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers],
    }
    middleware = TrustedProxies(app, parse_networks([trusted]) if trusted else ())
    asyncio.run(middleware(scope, None, None))  # type: ignore[arg-type]
    return seen


FORGED = [
    ("X-Forwarded-For", "203.0.113.9"),
    ("X-Real-IP", "203.0.113.10"),
    ("X-Forwarded-Proto", "https"),
    ("Forwarded", "for=203.0.113.11;proto=https"),
    ("X-Forwarded-Host", "evil.example"),
]


@pytest.mark.parametrize("trusted", ["", "10.0.0.1", "10.0.0.0/8"])
def test_forged_headers_from_an_untrusted_peer_are_ignored_and_removed(trusted: str) -> None:
    seen = seen_by_app(trusted, "127.0.0.1", [("Host", "a"), *FORGED])
    assert seen["client"] == ("127.0.0.1", 41000) and seen["scheme"] == "http"
    assert seen["headers"] == [(b"host", b"a")]  # nothing forwarded reaches the app


def test_a_trusted_proxy_names_the_client_and_the_scheme() -> None:
    seen = seen_by_app("127.0.0.2", "127.0.0.2", [("X-Forwarded-For", "198.51.100.7"), *FORGED[2:3]])
    assert seen["client"] == ("198.51.100.7", 0) and seen["scheme"] == "https"
    assert seen["headers"] == []


@pytest.mark.parametrize(
    ("header", "client"),
    [
        ("198.51.100.7, 10.0.0.3", "198.51.100.7"),  # a second trusted proxy between: skipped
        ("1.2.3.4, 198.51.100.7", "198.51.100.7"),  # a client's own forgery on the left: never reached
        ("1.2.3.4, 198.51.100.7, 10.0.0.3", "198.51.100.7"),
        ("not-an-address", "10.0.0.1"),  # garbage: the proxy itself, never a free choice
        ("1.2.3.4, garbage, 10.0.0.3", "10.0.0.3"),
        ("[2001:db8::5]", "2001:db8::5"),
        ("::ffff:198.51.100.7", "198.51.100.7"),
        ("", "10.0.0.1"),
    ],
)
def test_the_client_is_the_right_most_address_that_is_not_a_trusted_proxy(header: str, client: str) -> None:
    seen = seen_by_app("10.0.0.0/24", "10.0.0.1", [("X-Forwarded-For", header)])
    assert seen["client"][0] == client


def test_a_proto_other_than_http_or_https_is_ignored() -> None:
    for value in ("javascript", "HTTPS ", "ftp", "https, http"):
        seen = seen_by_app("127.0.0.2", "127.0.0.2", [("X-Forwarded-Proto", value)])
        assert seen["scheme"] == ("https" if value == "HTTPS " else "http"), value


@pytest.mark.parametrize("bad", ["0.0.0.0/0", "::/0", "proxy.example", "127.0.0.1:80", "300.1.1.1"])
def test_a_trusted_proxy_setting_that_is_no_address_or_trusts_everyone_is_refused(bad: str) -> None:
    with pytest.raises(
        ValueError, match=repr(bad).replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")
    ):
        parse_networks([bad])
    assert parse_networks(["127.0.0.1, 10.0.0.0/8 ::1"]) == (
        ipaddress.ip_network("127.0.0.1/32"),
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("::1/128"),
    )


# ---- real servers -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[ClassroomServer, Path]]]:
    made: dict[str, tuple[ClassroomServer, Path]] = {}
    try:
        for name, args in (("default", ()), ("trusting", ("--trusted-proxy", "127.0.0.2"))):
            tmp = tmp_path_factory.mktemp(f"proxy-{name}")
            env = classroom_env(tmp / "home")
            make_class(env, ("anna", "ben", "cleo"), tmp)
            made[name] = (ClassroomServer(env, args).start(), tmp / "home" / "classroom.db")
        yield made
    finally:
        for server, _ in made.values():
            server.stop()


def failures(db: Path) -> dict[tuple[str, str], int]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT username, address, failures FROM login_failures").fetchall()
    return {(u, a): n for u, a, n in rows}


@pytest.mark.slow
def test_by_default_a_rotated_x_forwarded_for_does_not_escape_the_back_off(servers: dict) -> None:
    """No proxy configured: a client on 127.0.0.1 (where uvicorn would believe the header) forges a new
    X-Forwarded-For (and X-Real-IP, Forwarded) on every try. After the free tries it waits, even with the
    right password and yet another forged address; every failure was counted against 127.0.0.1."""
    server, db = servers["default"]
    with client_from("127.0.0.1", server.base) as client:
        for i in range(FREE_TRIES):
            forged = f"198.51.100.{i + 1}"
            r = log_in(
                client,
                "anna",
                "wrong-password",
                server.base,
                **{"X-Forwarded-For": forged, "X-Real-IP": forged, "Forwarded": f"for={forged}"},
            )
            assert r.status_code == 401, r.text
        r = log_in(client, "anna", "a-long-password-1", server.base, **{"X-Forwarded-For": "198.51.100.99"})
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1, r.text
    assert failures(db) == {("anna", "127.0.0.1"): FREE_TRIES}


@pytest.mark.slow
def test_a_trusted_proxy_keys_the_back_off_on_the_address_it_forwards(servers: dict) -> None:
    """--trusted-proxy 127.0.0.2: from there the forwarded address is the client (each its own counter: the
    control that shows the header is read at all); from 127.0.0.3, not a proxy, the same forgery counts
    against 127.0.0.3, and the back-off holds."""
    server, db = servers["trusting"]
    with client_from("127.0.0.2", server.base) as proxy:
        for i in range(FREE_TRIES + 1):
            r = log_in(
                proxy, "ben", "wrong-password", server.base, **{"X-Forwarded-For": f"198.51.100.{i + 1}"}
            )
            assert r.status_code == 401, r.text  # never 429: six addresses, one failure each
    with client_from("127.0.0.3", server.base) as direct:
        for i in range(FREE_TRIES):
            r = log_in(
                direct, "cleo", "wrong-password", server.base, **{"X-Forwarded-For": f"203.0.113.{i + 1}"}
            )
            assert r.status_code == 401, r.text
        r = log_in(direct, "cleo", "a-long-password-1", server.base, **{"X-Forwarded-For": "203.0.113.99"})
        assert r.status_code == 429, r.text
    counted = failures(db)
    assert {k: v for k, v in counted.items() if k[0] == "ben"} == {
        ("ben", f"198.51.100.{i + 1}"): 1 for i in range(FREE_TRIES + 1)
    }
    assert {k: v for k, v in counted.items() if k[0] == "cleo"} == {("cleo", "127.0.0.3"): FREE_TRIES}
