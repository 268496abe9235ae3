"""Issue 36, item 1: a class logs in through a real OpenID provider (npm oidc-provider, started once per test
session on loopback: tests/oidc_provider.py) — what a learner, a teacher and a roster entry see, logout on the
server and at the provider, a public client, a provider whose ID tokens are thin, and a class that turns
passwords off. The attacks are in tests/test_oidc_refusals.py.

Account creation, roster matching and the teacher role run on SQLite and on the session's real PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from classroom_app import database_url
from fastapi.testclient import TestClient
from oidc_provider import (
    BASE,
    TEACHERS,
    Provider,
    SSOClass,
    csrf_headers,
    form_fields,
    me,
    query,
    sso_class,
)


@pytest.fixture(params=["sqlite", "postgresql"])
def klass(request: pytest.FixtureRequest, tmp_path: Path, oidc_provider: Provider) -> Iterator[SSOClass]:
    with sso_class(tmp_path, database_url(request.param, tmp_path, request), oidc_provider.issuer) as made:
        yield made


# ---- log-in ---------------------------------------------------------------------------------------------------


def test_a_first_log_in_creates_the_learner_and_lands_on_the_course(klass: SSOClass) -> None:
    before = len(klass.rows()["users"])
    anna = klass.browser()
    r = anna.login("anna", next_path="/lessons/01-intro")
    assert r.status_code == 303 and r.headers["location"] == "/lessons/01-intro", r.text
    page = anna.app.get("/lessons/01-intro")
    assert page.status_code == 200 and "Copying" in page.text
    assert anna.app.get("/").status_code == 200
    who = me(anna)
    assert (who["username"], who["role"], who["display_name"]) == ("anna", "learner", "Anna Lima")
    row = klass.user("anna")
    assert row["email"] == "anna@uni.example" and row["password_hash"] is None
    assert len(klass.rows()["users"]) == before + 1
    [link] = klass.identities()
    assert (link["issuer"], link["subject"], link["user_id"]) == (
        klass.room.sso.issuer,
        "sub-anna",
        row["id"],
    )
    # a full classroom session: the learner's own code is saved through the CSRF-checked API
    code = anna.app.get("/api/exercises/vector-copy/code").json()  # type: ignore[attr-defined]
    saved = anna.app.put(  # type: ignore[attr-defined]
        "/api/exercises/vector-copy/code",
        json={"text": "# anna was here\n", "base_version": code["version"]},
        headers=csrf_headers(anna.app),
    )
    assert saved.status_code == 200, saved.text


def test_a_second_log_in_is_the_same_learner(klass: SSOClass) -> None:
    first = klass.browser()
    assert first.login("anna").status_code == 303
    who = me(first)
    rows = len(klass.rows()["users"])
    second = klass.browser()  # another browser: a new session at the provider and at the class
    assert second.login("anna").status_code == 303
    assert me(second)["id"] == who["id"]
    assert len(klass.rows()["users"]) == rows and len(klass.identities()) == 1
    # the same browser again: the provider's session answers at once, no log-in asked
    back = first.authorize(first.start(), account=None)
    assert first.callback(back).status_code == 303 and me(first)["id"] == who["id"]


def test_a_roster_email_is_matched_not_duplicated(klass: SSOClass) -> None:
    bsilva, _ = klass.room.add("bsilva", "B. Silva", email="ben@uni.example")
    before = len(klass.rows()["users"])
    ben = klass.browser()
    assert ben.login("ben").status_code == 303  # the provider says Ben@Uni.Example: case does not matter
    assert me(ben)["username"] == "bsilva" and me(ben)["id"] == bsilva.id
    assert len(klass.rows()["users"]) == before
    assert [(i["subject"], i["user_id"]) for i in klass.identities()] == [("sub-ben", bsilva.id)]


def test_a_username_taken_by_a_password_account_is_not_taken_over(klass: SSOClass) -> None:
    """A password account `anna` without an e-mail is someone else: the provider's anna gets a new name."""
    other, _ = klass.room.add("anna", "Another Anna")
    browser = klass.browser()
    assert browser.login("anna").status_code == 303
    who = me(browser)
    assert who["id"] != other.id and who["username"] == "anna-2"


def test_the_teacher_group_gives_the_teacher_view_and_leaving_it_takes_it_away(
    klass: SSOClass, oidc_provider: Provider
) -> None:
    prof = klass.browser()
    assert prof.login("prof").status_code == 303
    assert me(prof)["role"] == "teacher"
    assert prof.app.get("/teacher").status_code == 200
    assert prof.app.get("/api/classroom/users").status_code == 200
    anna = klass.browser()
    anna.login("anna")
    assert anna.app.get("/teacher").status_code == 403
    try:  # the provider's administrator takes prof out of the teachers' group
        oidc_provider.set_claims("prof", groups=["gpu-101"])
        again = klass.browser()
        assert again.login("prof").status_code == 303
        assert me(again)["role"] == "learner"
        assert again.app.get("/teacher").status_code == 403
        assert (
            prof.app.get("/teacher").status_code == 403
        )  # the older session too: roles are read per request
    finally:
        oidc_provider.set_claims("prof", groups=["gpu-101", TEACHERS])


def test_a_roster_teacher_stays_a_teacher_without_the_group(klass: SSOClass) -> None:
    teacher = klass.room.user("teacher")
    klass.room.set_email(teacher, "head@uni.example")
    head = klass.browser()
    assert head.login("head").status_code == 303
    assert me(head)["username"] == "teacher" and me(head)["role"] == "teacher"
    assert head.app.get("/teacher").status_code == 200


def test_a_closed_join_link_admits_the_roster_but_creates_no_one(klass: SSOClass) -> None:
    klass.room.add("carla-r", email="carla@uni.example")
    klass.room.set_join_open(False)
    before = klass.rows()
    stranger = klass.browser()
    r = stranger.login("anna")
    assert r.status_code == 403 and "closed to new learners" in r.text
    assert klass.rows() == before
    carla = klass.browser()
    assert carla.login("carla").status_code == 303 and me(carla)["username"] == "carla-r"


def test_a_disabled_account_is_refused(klass: SSOClass) -> None:
    user, _ = klass.room.add("annalima", email="anna@uni.example")
    klass.room.set_disabled(user, True)
    r = klass.browser().login("anna")
    assert r.status_code == 403 and "disabled" in r.text
    assert not klass.rows()["sessions"]


# ---- logout -----------------------------------------------------------------------------------------------------


def test_logout_ends_the_session_on_the_server_and_at_the_provider(
    tmp_path: Path, oidc_provider: Provider
) -> None:
    with sso_class(tmp_path, f"sqlite:///{tmp_path / 'c.db'}", oidc_provider.issuer) as klass:
        anna = klass.browser()
        assert anna.login("anna").status_code == 303
        kept = TestClient(klass.app, base_url=BASE)
        for cookie in anna.app.cookies.jar:  # type: ignore[attr-defined]
            kept.cookies.set(cookie.name, cookie.value)
        assert kept.get("/api/me").status_code == 200
        r = anna.app.post("/auth/logout", headers=csrf_headers(anna.app))  # type: ignore[attr-defined]
        assert r.status_code == 200, r.text
        end = r.json()["redirect"]
        assert end.startswith(oidc_provider.issuer + "/session/end?")
        assert query(end) == {"client_id": "tritonlab", "post_logout_redirect_uri": f"{BASE}/login"}
        assert (
            kept.get("/api/me").status_code == 401
        )  # the copy of the old cookie is refused: ended on the server
        assert kept.get("/", follow_redirects=False).status_code == 303
        assert not klass.rows()["sessions"]
        # the provider's end-session page asks to confirm; yes ends its session and comes back to /login
        page = anna.idp.get(end)
        assert page.status_code == 200
        fields = form_fields(page.text)
        action = httpx.URL(end).join("/session/end/confirm")
        done = anna.idp.post(str(action), data={**fields, "logout": "yes"}, follow_redirects=False)
        assert done.status_code in (302, 303) and done.headers["location"] == f"{BASE}/login"
        # the provider's session is gone: logging in again asks for the account
        start = anna.start()
        asked = anna.idp.get(start, follow_redirects=False)
        assert "/interaction/" in asked.headers["location"]
        # a password user's logout ends their session and stays here
        teacher = TestClient(klass.app, base_url=BASE)
        teacher.post(
            "/api/login",
            json={"username": "teacher", "password": klass.teacher_password},
            headers={"Origin": BASE},
        )
        r = teacher.post("/auth/logout", headers=csrf_headers(teacher))
        assert r.json()["redirect"] == "/login" and teacher.get("/api/me").status_code == 401


# ---- other kinds of clients and providers -------------------------------------------------------------------------


def test_a_public_client_logs_in_with_pkce_alone(tmp_path: Path, oidc_provider: Provider) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with sso_class(
        tmp_path, url, oidc_provider.issuer, client_id="tritonlab-public", client_secret=None
    ) as klass:
        anna = klass.browser()
        start = anna.start()
        assert query(start)["code_challenge_method"] == "S256" and len(query(start)["code_challenge"]) == 43
        assert anna.callback(anna.authorize(start, "anna")).status_code == 303
        assert me(anna)["username"] == "anna"


def test_a_thin_id_token_is_completed_from_userinfo(tmp_path: Path, oidc_provider: Provider) -> None:
    """The other issuer puts only `sub` in its ID tokens (like Okta): e-mail and groups come from userinfo."""
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with sso_class(tmp_path, url, oidc_provider.other_issuer) as klass:
        prof = klass.browser()
        assert prof.login("prof").status_code == 303
        who = me(prof)
        assert (who["username"], who["role"]) == ("prof", "teacher")
        assert klass.user("prof")["email"] == "prof@uni.example"
        eve = klass.browser().login("eve")  # the domain check still holds on claims from userinfo
        assert eve.status_code == 403


def test_an_allowed_group_admits_its_members_only(tmp_path: Path, oidc_provider: Provider) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with sso_class(
        tmp_path, url, oidc_provider.issuer, allowed_domains=[], allowed_groups=["gpu-101"]
    ) as klass:
        assert klass.browser().login("eve").status_code == 303  # another domain, but in the group
        before = klass.rows()
        r = klass.browser().login("outsider")
        assert r.status_code == 403 and "not in a group" in r.text
        assert klass.rows() == before


# ---- a class that logs in through its provider only ---------------------------------------------------------------


def test_oidc_only_turns_passwords_off(tmp_path: Path, oidc_provider: Provider) -> None:
    with sso_class(tmp_path, f"sqlite:///{tmp_path / 'c.db'}", oidc_provider.issuer, only=True) as klass:
        client = TestClient(klass.app, base_url=BASE)
        page = client.get("/login").text
        assert 'id="sso-login"' in page and "Log in with Uni Login" in page and 'id="login-form"' not in page
        r = client.post(
            "/api/login",
            json={"username": "teacher", "password": klass.teacher_password},
            headers={"Origin": BASE},
        )
        assert r.status_code == 401 and "Uni Login only" in r.json()["error"]
        join = client.get(f"/join/{klass.join_code}").text
        assert 'id="sso-join"' in join and 'id="join-form"' not in join
        before = klass.rows()
        r = client.post(
            f"/api/join/{klass.join_code}",
            json={"username": "sneaky", "password": "long-enough-password"},
            headers={"Origin": BASE},
        )
        assert r.status_code == 403 and klass.rows() == before
        assert klass.browser().login("anna").status_code == 303
    with sso_class(tmp_path / "mixed", f"sqlite:///{tmp_path / 'm.db'}", oidc_provider.issuer) as mixed:
        client = TestClient(mixed.app, base_url=BASE)
        page = client.get("/login").text
        assert 'id="sso-login"' in page and 'id="login-form"' in page
        r = client.post(
            "/api/login",
            json={"username": "teacher", "password": mixed.teacher_password},
            headers={"Origin": BASE},
        )
        assert r.status_code == 200


def test_a_class_without_a_provider_has_no_sso_routes(tmp_path: Path) -> None:
    from classroom_app import class_server

    with class_server(tmp_path, f"sqlite:///{tmp_path / 'c.db'}") as server:
        client = server.client()
        assert client.get("/auth/start", follow_redirects=False).status_code == 404
        assert client.get("/auth/callback?state=x&code=y").status_code == 404
        assert 'id="sso-login"' not in client.get("/login").text


# ---- settings: what `serve` refuses before it starts ---------------------------------------------------------------

GOOD = {
    "issuer": "https://login.uni.example/realms/uni",
    "client_id": "gpu-101",
    "allowed_domains": ["uni.example"],
}


@pytest.mark.parametrize(
    "changes, public_url, says",
    [
        ({}, None, "OIDC needs --public-url"),
        ({"issuer": "http://login.uni.example"}, BASE, "must use https"),
        ({"issuer": "https://login.uni.example/?x=1"}, BASE, "must be the provider's https URL"),
        ({"client_id": ""}, BASE, "--oidc-client-id is required"),
        ({"allowed_domains": []}, BASE, "say who may log in"),
        ({"allowed_domains": ["uni..example"]}, BASE, "is not a domain name"),
        ({"scopes": "email profile"}, BASE, "must include openid"),
        ({"leeway_s": 3600}, BASE, "leeway_s must be 0 to 300"),
        ({"issuer": None}, BASE, "without --oidc-issuer"),
        ({"only": "yes"}, BASE, "only must be true or false"),
    ],
)
def test_settings_that_cannot_work_are_refused(changes: dict, public_url: str | None, says: str) -> None:
    from tritonlab.classroom import oidc

    with pytest.raises(oidc.SettingsError, match=re.escape(says)):
        oidc.build({**GOOD, **changes}, public_url)


def test_serve_refuses_oidc_settings_that_cannot_work_and_reads_a_file(tmp_path: Path, home: Path) -> None:
    from conftest import cli

    r = cli("serve", "--classroom", "--no-browser", "--oidc-issuer", GOOD["issuer"], "--oidc-client-id", "c")
    assert r.returncode == 2 and "OIDC needs --public-url" in r.stderr, r.stderr
    r = cli(
        "serve",
        "--no-browser",
        "--public-url",
        BASE,
        "--oidc-issuer",
        GOOD["issuer"],
        "--oidc-client-id",
        "c",
        "--oidc-allowed-domain",
        "uni.example",
    )
    assert r.returncode == 2 and "need --classroom" in r.stderr, r.stderr
    settings = tmp_path / "oidc.toml"
    settings.write_text('[oidc]\nclient_id = "c"\nallowed_domains = ["uni.example"]\nteachers = ["x"]\n')
    r = cli(
        "serve",
        "--classroom",
        "--no-browser",
        "--public-url",
        BASE,
        "--oidc-config",
        str(settings),
        env={"TRITONLAB_OIDC_ISSUER": GOOD["issuer"]},
    )
    assert r.returncode == 2 and "unknown OIDC setting(s) teachers" in r.stderr, r.stderr


def test_settings_from_a_file_options_and_the_environment(tmp_path: Path) -> None:
    from tritonlab.classroom import oidc

    secret = tmp_path / "secret"
    secret.write_text("from-the-file\n")
    settings = tmp_path / "oidc.toml"
    settings.write_text(
        '[oidc]\nissuer = "https://login.uni.example"\nclient_id = "from-file"\n'
        f'client_secret_file = "{secret}"\nallowed_groups = ["g1", "g2"]\nonly = true\nleeway_s = 30\n'
    )
    found = oidc.settings(
        {"client_id": "from-option", "allowed_domains": ["Uni.Example"]}, settings, BASE + "/"
    )
    assert found is not None
    assert (found.client_id, found.client_secret, found.only, found.leeway_s) == (
        "from-option",
        "from-the-file",
        True,
        30,
    )
    assert (found.allowed_domains, found.allowed_groups) == (("uni.example",), ("g1", "g2"))
    assert (found.redirect_uri, found.post_logout_uri) == (f"{BASE}/auth/callback", f"{BASE}/login")
    assert oidc.settings({}, None, BASE) is None  # no issuer anywhere: passwords only
