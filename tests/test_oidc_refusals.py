"""Issue 36, item 1: what a stranger sends during a provider log-in is hostile, and every check that stands
against it refuses — with a 401 (not proven) or 403 (proven, not allowed in) page that says why, and with no
account, provider link or session created.

The tokens are genuine: the real provider (tests/oidc_provider.py) issues them. What an attacker controls is
played by the test: the browser (it can change the authorization request, replay or forge the callback,
steal a code), a second client registered at the same provider, a second provider sharing the signing key,
and the wire between the provider and the class server (the provider script's one-shot tamper switch)."""

from __future__ import annotations

import base64
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from oidc_provider import (
    BASE,
    CLIENT_SECRET,
    OTHER_REDIRECT,
    OTHER_SECRET,
    Browser,
    Provider,
    SSOClass,
    query,
    sso_class,
    token_response,
    with_query,
)

from tritonlab.store import identities

SCOPE = "openid email profile groups"
NESTED = base64.urlsafe_b64encode(b"[" * 5000).rstrip(b"=").decode()


@pytest.fixture(scope="module")
def klass(tmp_path_factory: pytest.TempPathFactory, oidc_provider: Provider) -> Iterator[SSOClass]:
    root = tmp_path_factory.mktemp("oidc-refusals")
    with sso_class(root, f"sqlite:///{root / 'class.db'}", oidc_provider.issuer) as made:
        yield made


def refused(klass: SSOClass, response, status: int, says: str, before: dict) -> None:  # noqa: ANN001
    assert response.status_code == status, (response.status_code, response.text[:500])
    assert "text/html" in response.headers["content-type"] and says in response.text, response.text[:800]
    assert klass.rows() == before, "a refused log-in changed accounts, provider links or sessions"


# ---- the ID token ------------------------------------------------------------------------------------------------


def test_an_id_token_issued_to_another_client_is_refused(klass: SSOClass, oidc_provider: Provider) -> None:
    """The attacker swaps in a genuine token response the provider issued to another application (same
    account, same nonce): only the audience tells them apart."""
    anna = klass.browser()
    start = anna.start()
    swapped = token_response(
        oidc_provider.issuer,
        "other-app",
        OTHER_SECRET,
        OTHER_REDIRECT,
        Browser(None),
        "anna",
        query(start)["nonce"],
        SCOPE,
    )
    back = anna.authorize(start, "anna")
    before = klass.rows()
    oidc_provider.tamper(mode="swap", body=swapped)
    refused(klass, anna.callback(back), 401, "not valid for this class (aud)", before)


def test_an_id_token_from_another_issuer_is_refused(klass: SSOClass, oidc_provider: Provider) -> None:
    """A second provider signing with the same key issues a token for this client id and nonce: only the
    issuer tells it apart."""
    anna = klass.browser()
    start = anna.start()
    swapped = token_response(
        oidc_provider.other_issuer,
        "tritonlab",
        CLIENT_SECRET,
        f"{BASE}/auth/callback",
        Browser(None),
        "anna",
        query(start)["nonce"],
        SCOPE,
    )
    back = anna.authorize(start, "anna")
    before = klass.rows()
    oidc_provider.tamper(mode="swap", body=swapped)
    refused(klass, anna.callback(back), 401, "not valid for this class (iss)", before)


def test_an_answer_naming_another_issuer_or_none_is_refused(klass: SSOClass, oidc_provider: Provider) -> None:
    """RFC 9207: the provider names itself in its answer (its discovery says it does); an answer naming another
    issuer, or none, is not the class's provider's."""
    anna = klass.browser()
    back = anna.authorize(anna.start(), "anna")
    before = klass.rows()
    forged = with_query(back, iss=oidc_provider.other_issuer)
    refused(klass, anna.callback(forged), 401, "another provider", before)
    back = anna.authorize(anna.start(), "anna")
    refused(klass, anna.callback(with_query(back, iss=None)), 401, "which provider it comes from", before)


def test_a_nonce_changed_in_the_authorization_request_is_refused(klass: SSOClass) -> None:
    anna = klass.browser()
    start = anna.start()
    back = anna.authorize(with_query(start, nonce="chosen-by-the-attacker"), "anna")
    before = klass.rows()
    refused(klass, anna.callback(back), 401, "not valid for this class (nonce)", before)


def test_an_expired_id_token_is_refused(klass: SSOClass, oidc_provider: Provider) -> None:
    """The provider's clock runs an hour behind when it issues the token: expired on arrival (60 s leeway)."""
    anna = klass.browser()
    back = anna.authorize(anna.start(), "anna")
    before = klass.rows()
    oidc_provider.clock(-3600)
    try:
        response = anna.callback(back)
    finally:
        oidc_provider.clock(0)
    refused(klass, response, 401, "the ID token has expired", before)


def test_an_id_token_issued_in_the_future_is_refused(klass: SSOClass, oidc_provider: Provider) -> None:
    anna = klass.browser()
    back = anna.authorize(anna.start(), "anna")
    before = klass.rows()
    oidc_provider.clock(300)  # the code (10 minutes) still holds; the token's iat is 5 minutes ahead
    try:
        response = anna.callback(back)
    finally:
        oidc_provider.clock(0)
    refused(klass, response, 401, "not valid for this class (iat)", before)


@pytest.mark.parametrize(
    "tamper",
    [{"mode": "signature"}, {"mode": "claim", "claim": "email", "value": "prof@uni.example"}],
    ids=["signature altered", "e-mail altered, signature kept"],
)
def test_a_tampered_id_token_is_refused(klass: SSOClass, oidc_provider: Provider, tamper: dict) -> None:
    anna = klass.browser()
    back = anna.authorize(anna.start(), "anna")
    before = klass.rows()
    oidc_provider.tamper(**tamper)
    refused(klass, anna.callback(back), 401, "signature does not verify", before)


BROKEN_BODIES = {
    "no id_token": {"access_token": "abc", "token_type": "Bearer"},
    "id_token a number": {"id_token": 5, "token_type": "Bearer"},
    "id_token not a JWT": {"id_token": "a.b.c", "token_type": "Bearer"},
    "id_token overlong": {"id_token": "e30." + "A" * 20000 + ".sig", "token_type": "Bearer"},
    "payload nested 5000 deep": {"id_token": f"eyJhbGciOiJSUzI1NiJ9.{NESTED}.c2ln", "token_type": "Bearer"},
    "unsigned (alg none)": {"id_token": "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "token_type": "Bearer"},
    "an array": [1, 2, 3],
    "null": None,
}


@pytest.mark.parametrize("body", list(BROKEN_BODIES.values()), ids=list(BROKEN_BODIES))
def test_a_broken_token_response_is_refused(klass: SSOClass, oidc_provider: Provider, body: object) -> None:
    anna = klass.browser()
    back = anna.authorize(anna.start(), "anna")
    before = klass.rows()
    oidc_provider.tamper(mode="swap", body=body)
    refused(klass, anna.callback(back), 401, "Log-in refused", before)


@pytest.mark.parametrize(
    "body, says",
    [
        ("<html>gateway timeout</html>", "token response could not be read"),
        ('{"id_token": "' + "A" * 300_000 + '"}', "larger than 256 KiB"),
    ],
    ids=["html", "300 KB"],
)
def test_a_token_response_that_is_not_a_token_is_refused(
    klass: SSOClass, oidc_provider: Provider, body: str, says: str
) -> None:
    anna = klass.browser()
    back = anna.authorize(anna.start(), "anna")
    before = klass.rows()
    oidc_provider.tamper(mode="raw", body=body)
    refused(klass, anna.callback(back), 401, says, before)


# ---- state, browser binding, PKCE ---------------------------------------------------------------------------------


def test_an_unknown_or_missing_state_is_refused(klass: SSOClass) -> None:
    anna = klass.browser()
    back = anna.authorize(anna.start(), "anna")
    before = klass.rows()
    refused(
        klass,
        anna.callback(with_query(back, state="A" * 43)),
        401,
        "unknown, already used or expired",
        before,
    )
    refused(
        klass, anna.callback(with_query(back, state=None)), 401, "unknown, already used or expired", before
    )


def test_a_replayed_callback_is_refused(klass: SSOClass) -> None:
    """The same answer twice, from the browser that started it and still holding its binding cookie (a
    successful callback clears it; a replaying client keeps it): the state works once."""
    anna = klass.browser()
    back = anna.authorize(anna.start(), "anna")
    kept = {c.name: c.value for c in anna.app.cookies.jar if c.name.endswith("_sso")}  # type: ignore[attr-defined]
    assert len(kept) == 1
    assert anna.callback(back).status_code == 303
    after_first = klass.rows()
    for name, value in kept.items():
        anna.app.cookies.set(name, value, path="/auth/")  # type: ignore[attr-defined]
    refused(klass, anna.callback(back), 401, "unknown, already used or expired", after_first)


def test_a_callback_from_another_browser_is_refused(klass: SSOClass) -> None:
    """Log-in CSRF: the attacker's own finished log-in, sent to a victim's browser, must not log the victim in
    as the attacker. The state is bound to the browser that started it."""
    attacker = klass.browser()
    back = attacker.authorize(attacker.start(), "anna")
    victim = klass.browser()
    before = klass.rows()
    refused(klass, victim.callback(back), 401, "started in another browser", before)
    refused(klass, attacker.callback(back), 401, "already used", before)  # single use, even for its owner


def test_a_stolen_code_redeemed_with_another_flows_verifier_is_refused(klass: SSOClass) -> None:
    """PKCE: a code the attacker intercepted, brought back under a log-in the attacker started (its own state,
    cookie and verifier), is refused by the provider because the verifier is not the victim's."""
    victim = klass.browser()
    stolen = query(victim.authorize(victim.start(), "anna"))["code"]
    attacker = klass.browser()
    mine = attacker.authorize(attacker.start(), "carla")
    before = klass.rows()
    forged = with_query(mine, code=stolen)
    refused(klass, attacker.callback(forged), 401, "did not accept this log-in (invalid_grant)", before)


def test_an_authorization_request_stripped_of_pkce_is_refused(klass: SSOClass) -> None:
    anna = klass.browser()
    start = with_query(anna.start(), code_challenge=None, code_challenge_method=None)
    back = anna.authorize(start, "anna")
    assert query(back).get("error") == "invalid_request", back
    before = klass.rows()
    refused(klass, anna.callback(back), 401, "did not log you in (invalid_request)", before)


def test_a_log_in_older_than_ten_minutes_is_refused(klass: SSOClass) -> None:
    anna = klass.browser()
    back = anna.authorize(anna.start(), "anna")
    with klass.room.db.engine.begin() as conn:
        conn.execute(sa.text("UPDATE sso_pending SET created_at = created_at - 601"))
    before = klass.rows()
    refused(klass, anna.callback(back), 401, "longer than 10 minutes", before)


@pytest.mark.parametrize(
    "forge",
    [
        lambda back: with_query(back, state="S" * 5000),
        lambda back: with_query(back, code="C" * 5000),
        lambda back: back + "&state=second",
        lambda back: with_query(back, code=None),
        lambda back: with_query(back, code="\x00\uffff<script>"),
    ],
    ids=["overlong state", "overlong code", "state twice", "no code", "junk code"],
)
def test_forged_callback_parameters_are_refused(klass: SSOClass, forge) -> None:  # noqa: ANN001
    anna = klass.browser()
    back = anna.authorize(anna.start(), "anna")
    before = klass.rows()
    response = anna.callback(forge(back))
    refused(klass, response, 401, "Log-in refused", before)


def test_a_flood_of_unfinished_log_ins_pushes_out_the_oldest_not_everyone(
    klass: SSOClass, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the cap, a new log-in still starts; the oldest unfinished one makes room and its answer is refused."""
    with klass.room.db.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM sso_pending"))
    monkeypatch.setattr(identities, "MAX_PENDING", 2)
    oldest, middle, newest = klass.browser(), klass.browser(), klass.browser()
    first = oldest.authorize(oldest.start(), "anna")
    second = middle.authorize(middle.start(), "anna")
    third = newest.authorize(newest.start(), "anna")  # the cap: the oldest makes room
    with klass.room.db.engine.begin() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM sso_pending")).scalar() == 2
    before = klass.rows()
    refused(klass, oldest.callback(first), 401, "unknown, already used or expired", before)
    assert middle.callback(second).status_code == 303 and newest.callback(third).status_code == 303


# ---- who is let in --------------------------------------------------------------------------------------------------


def test_an_email_outside_the_allowed_domain_is_refused(klass: SSOClass) -> None:
    before = klass.rows()
    refused(klass, klass.browser().login("eve"), 403, "eve@elsewhere.example is not in this class", before)


def test_an_unverified_email_is_refused(klass: SSOClass) -> None:
    before = klass.rows()
    refused(klass, klass.browser().login("mal"), 403, "verified e-mail", before)


def test_a_roster_account_already_linked_is_not_taken_by_another_provider_account(
    klass: SSOClass, oidc_provider: Provider
) -> None:
    """The provider gives an e-mail address that once was someone else's to a new account: the class's
    account stays with the first one."""
    klass.room.add("head-r", email="head@uni.example")
    head = klass.browser()
    assert head.login("head").status_code == 303
    oidc_provider.set_claims("carla", email="head@uni.example")
    try:
        before = klass.rows()
        refused(klass, klass.browser().login("carla"), 403, "already linked to another account", before)
    finally:
        oidc_provider.set_claims("carla", email="carla@uni.example")


def test_a_provider_whose_discovery_names_another_issuer_is_refused(
    tmp_path: Path, oidc_provider: Provider
) -> None:
    with sso_class(tmp_path, f"sqlite:///{tmp_path / 'c.db'}", oidc_provider.issuer + "/") as klass:
        r = klass.browser().app.get("/auth/start", follow_redirects=False)  # type: ignore[attr-defined]
        assert r.status_code == 502 and "set --oidc-issuer to exactly what the provider says" in r.text


def test_a_provider_that_cannot_be_reached_is_a_clear_page_tried_once_per_ten_seconds(tmp_path: Path) -> None:
    """A provider that hangs up: a 502 page saying so, passwords still offered, and the failure kept, so that
    a class arriving at once does not hold a request thread each on the dead provider."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    tries: list[int] = []

    def hang_up() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            tries.append(1)
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    down = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        with sso_class(tmp_path, f"sqlite:///{tmp_path / 'c.db'}", down) as klass:
            browser = klass.browser()
            for _ in range(3):
                r = browser.app.get("/auth/start", follow_redirects=False)  # type: ignore[attr-defined]
                assert r.status_code == 502 and "could not be read: ConnectionError" in r.text, r.text[:500]
            assert len(tries) == 1, f"the dead provider was asked {len(tries)} times"
            login = TestClient(klass.app, base_url=BASE).get("/login")
            assert login.status_code == 200 and 'id="login-form"' in login.text  # passwords still work
    finally:
        listener.close()
