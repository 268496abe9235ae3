"""Issue 34, item 5: a `next` target only ever sends the browser to a path of this server.

Browsers read a `Location` or `window.location` generously: a backslash counts as a slash, tabs and newlines
are dropped, so `/\\evil.example` and `/<TAB>/evil.example` land on evil.example; a target that arrives
percent-encoded is one decoding away from the same. Every hostile form below must become `/` everywhere a
`next` is taken — the log-in page's target (`/login?next=`, which the page's script follows after log-in), the
language switch's redirect (`POST /settings/lang`, single-user and classroom) — and the page script's own
check must refuse the literal forms too (run in node). The course's own paths are the control: they pass."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from classroom_app import BASE, ClassServer, class_server, database_url, single_server

from tritonlab.web.redirects import same_origin_path

ROOT = Path(__file__).resolve().parent.parent
EVIL = "evil.example"
HOSTILE = [
    f"//{EVIL}",
    f"///{EVIL}",
    f"/\\{EVIL}",
    f"\\\\{EVIL}",
    f"/\\/{EVIL}",
    f"/\t/{EVIL}",
    f"/\t\\{EVIL}",
    f"/\n/{EVIL}",
    f"/\r\n/{EVIL}",
    f"/\x00/{EVIL}",
    f"/ /{EVIL}",
    f"/%5C{EVIL}/x",
    f"/%5c{EVIL}",
    f"%2F%2F{EVIL}",
    f"/%2F%2F{EVIL}",
    f"/%2f/{EVIL}",
    f"/%252F%252F{EVIL}",
    f"/%25252F%25252F{EVIL}",
    f"/%255C{EVIL}",
    f"/%09/{EVIL}",
    f"/%0d%0aLocation:%20http://{EVIL}",
    f"/%0A/{EVIL}",
    f"/%E2%88%95%E2%88%95{EVIL}",  # U+2215 DIVISION SLASH, twice
    f"/\u2215\u2215{EVIL}",
    f"/\uff0f{EVIL}",  # FULLWIDTH SOLIDUS
    f"https://{EVIL}",
    f"http:/{EVIL}",
    f"http:\\\\{EVIL}",
    "javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    EVIL,
    f" /{EVIL}",
    "",
    "/" + "a" * 3000,  # longer than any path of ours
]
OURS = ["/", "/lessons/01-intro", "/lessons/01-intro?tab=quiz#quiz", "/teacher", "/leaderboard", "/login"]


@pytest.mark.parametrize("target", HOSTILE)
def test_a_hostile_next_becomes_home(target: str) -> None:
    assert same_origin_path(target) == "/", repr(target)


@pytest.mark.parametrize("target", OURS)
def test_our_own_paths_are_kept(target: str) -> None:
    assert same_origin_path(target) == target


def test_not_a_string_becomes_home() -> None:
    for value in (None, 3, ["/lessons"], b"/lessons"):
        assert same_origin_path(value) == "/"


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[ClassServer]:
    root = tmp_path_factory.mktemp("redirect-class")
    with class_server(root, database_url("sqlite", root, request)) as made:
        yield made


def login_target(room: ClassServer, target: str) -> str:
    page = room.client().get("/login?" + urlencode({"next": target}))
    assert page.status_code == 200, page.text[:300]
    found = re.search(r'data-next="([^"]*)"', page.text)
    assert found, "the log-in page names no target"
    return html.unescape(found.group(1))


def test_the_login_page_keeps_only_our_paths(room: ClassServer) -> None:
    for target in HOSTILE:
        assert login_target(room, target) == "/", repr(target)
    for target in OURS:
        assert login_target(room, target) == target, repr(target)
    # the exact request, as a browser sends it
    page = room.client().get(f"/login?next=/%5C{EVIL}/x")
    assert 'data-next="/"' in page.text


def switch(client, target: str, headers: dict) -> str:  # noqa: ANN001
    r = client.post(
        "/settings/lang",
        content=urlencode({"lang": "en", "next": target}),
        headers={"Content-Type": "application/x-www-form-urlencoded", **headers},
        follow_redirects=False,
    )
    assert r.status_code == 303, (target, r.status_code, r.text[:200])
    return r.headers["location"]


def test_the_language_switch_redirects_only_to_our_paths(room: ClassServer, tmp_path: Path) -> None:
    learner = room.login("anna")
    with single_server(tmp_path, "redirect-token-0123456789") as single:
        from fastapi.testclient import TestClient

        alone = TestClient(single.app, base_url=BASE)
        alone.get("/?token=redirect-token-0123456789", follow_redirects=False)
        for client, headers in (
            (room.client(), {"Origin": BASE}),  # a visitor of the class (the form needs no session)
            (learner.client, learner.headers),
            (alone, {"Origin": BASE}),  # the single-user server
        ):
            for target in HOSTILE:
                assert switch(client, target, headers) == "/", repr(target)
            for target in OURS:
                assert switch(client, target, headers) == quote(target, safe="/?#=&:"), repr(target)


def test_the_page_script_refuses_the_literal_forms_too() -> None:
    """static/classroom.js checks the target again before `window.location.href = ...` (a page rendered by an
    older server could still hold one): its own rule, run in node over the forms as they would reach it."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = (ROOT / "src" / "tritonlab" / "web" / "static" / "classroom.js").read_text()
    rule = re.search(r"const SAME_ORIGIN_PATH = (/.+/);", script)
    fn = re.search(r"function safeNext\(target\) \{\n(.*?)\n  \}", script, re.S)
    assert rule and fn, "classroom.js no longer has SAME_ORIGIN_PATH / safeNext"
    literal = [t for t in HOSTILE if "%" not in t]  # the browser never decodes what the page holds
    program = (
        f"const SAME_ORIGIN_PATH = {rule.group(1)};\n"
        f"function safeNext(target) {{\n{fn.group(1)}\n}}\n"
        f"const forms = {json.dumps(literal + OURS + [None, 5])};\n"
        "console.log(JSON.stringify(forms.map(safeNext)));\n"
    )
    done = subprocess.run([node, "-e", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got[: len(literal)] == ["/"] * len(literal), list(zip(literal, got, strict=False))
    assert got[len(literal) : len(literal) + len(OURS)] == OURS
    assert got[-2:] == ["/", "/"]
