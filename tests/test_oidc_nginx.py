"""Single sign-on behind the documented deployment (issue 36, items 1 and 2 together): nginx from Debian running
the shipped site (tests/deploy_proxy.py) in front of a real `serve --classroom --trusted-proxy 127.0.0.1
--public-url https://localhost:PORT` that logs in through the real test provider (tests/oidc_provider.py).

- The provider is told to send the browser back to the public URL's /auth/callback whatever forwarded headers
  a client forges, through nginx or straight to the server: the redirect URI comes from --public-url only,
  never from a request; the log-in's browser cookie is Secure (the public URL is https).
- In Chromium (`browser`): a learner goes to the class through nginx, signs in at the provider, comes back
  through nginx to the page asked for, logged in, with Secure session cookies."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from classroom_server import ClassroomServer, classroom_env, client_from, make_class
from deploy_proxy import Proxy, nginx_binary, start_nginx
from oidc_provider import CLIENT_SECRET, Provider

CHROMIUM = "/usr/bin/chromium"
FORGED = {"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http", "Forwarded": "host=evil.example"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory, oidc_provider: Provider) -> Iterator[dict]:
    nginx_binary()  # skips, saying why, before anything starts where Debian's nginx is missing
    tmp = tmp_path_factory.mktemp("oidc-nginx")
    env = classroom_env(tmp / "home", TRITONLAB_OIDC_CLIENT_SECRET=CLIENT_SECRET)
    make_class(env, ("ben",), tmp)
    public = oidc_provider.proxied  # registered at the provider as this class's redirect URI
    https = int(public.rsplit(":", 1)[1])
    server = ClassroomServer(
        env,
        ("--trusted-proxy", "127.0.0.1", "--public-url", public, "--oidc-issuer", oidc_provider.issuer)
        + (
            "--oidc-client-id",
            "tritonlab",
            "--oidc-allowed-domain",
            "uni.example",
            "--oidc-name",
            "Uni Login",
        ),
    ).start()
    proxy: Proxy | None = None
    try:
        proxy = start_nginx(tmp / "nginx", server.port, https=https)
        yield {"server": server, "public": public}
    finally:
        if proxy is not None:
            proxy.stop()
        server.stop()


def _redirect_uri(response) -> str:  # noqa: ANN001
    assert response.status_code == 303, response.text
    return parse_qs(urlsplit(response.headers["location"]).query)["redirect_uri"][0]


def _sso_cookie(response) -> str:  # noqa: ANN001
    found = [c for c in response.headers.get_list("set-cookie") if "_sso=" in c.split(";")[0]]
    assert len(found) == 1, response.headers
    return found[0]


def test_the_callback_is_the_public_url_whatever_a_client_forges(deployed: dict) -> None:
    public, server = deployed["public"], deployed["server"]
    with client_from("127.0.0.3", public, verify=False) as through_nginx:
        r = through_nginx.get("/auth/start", params={"next": "/"}, headers=FORGED)
        assert _redirect_uri(r) == public + "/auth/callback"
        assert "; Secure" in _sso_cookie(r)
    # straight to the server, from the trusted proxy's own address and from another one
    for address in ("127.0.0.1", "127.0.0.2"):
        with client_from(address, server.base) as direct:
            r = direct.get(
                "/auth/start", params={"next": "/"}, headers={**FORGED, "Host": f"localhost:{server.port}"}
            )
            assert _redirect_uri(r) == public + "/auth/callback", address
            assert "; Secure" in _sso_cookie(r), address


@pytest.mark.browser
def test_a_learner_signs_in_through_nginx_in_chromium(deployed: dict) -> None:
    from pathlib import Path

    if not Path(CHROMIUM).exists():
        pytest.skip("needs Debian's Chromium at /usr/bin/chromium (make system-deps)")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")
    from test_web_browser import ARGS

    expect, public, errors = playwright_api.expect, deployed["public"], []
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, ignore_https_errors=True)
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.set_default_timeout(60_000)
        page.goto(public + "/lessons/05-vector-add")
        expect(page).to_have_url(re.compile(r"^https://localhost:\d+/login\?next="))
        page.click("#sso-login")
        page.fill("#login", "anna")  # the provider's own page (plain http on loopback)
        page.click("#sign-in")
        expect(page).to_have_url(public + "/lessons/05-vector-add")  # back through nginx, over https
        expect(page.locator("#user-pill")).to_contain_text("Anna Lima (")
        me = page.request.get(public + "/api/me")
        assert me.ok and me.json()["username"] == "anna"
        cookies = {c["name"]: c for c in context.cookies(public)}
        session = [c for name, c in cookies.items() if name.startswith("tritonlab_session_")]
        assert session and all(c["secure"] for c in session), cookies
        assert cookies["tritonlab_csrf"]["secure"], cookies
        browser.close()
    assert not errors, errors
