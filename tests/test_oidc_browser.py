"""Issue 36, item 1, in a real browser: `tritonlab serve --classroom --oidc-only` (a subprocess, configured the way
a deployment is: options, a TOML file and the secret in the environment) behind the real test provider
(tests/oidc_provider.py). A learner clicks the log-in button, signs in at the provider, lands on the course;
the Log out button ends the session on the server and, through the provider's end-session page, there too."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from oidc_provider import CLIENT_SECRET, GROUP, Provider
from test_web_browser import ARGS, CHROMIUM, course_for_test

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.browser, pytest.mark.slow]
if not CHROMIUM.exists():
    pytestmark.append(
        pytest.mark.skip(reason="needs Debian's Chromium at /usr/bin/chromium (make system-deps)")
    )
playwright_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, oidc_provider: Provider) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("oidc-browser")
    env = dict(
        os.environ,
        TRITONLAB_HOME=str(tmp / "home"),
        TRITONLAB_COURSE=str(course_for_test(tmp)),
        TRITONLAB_BACKEND="interpreter",
        TRITONLAB_LANG="en",
        TRITONLAB_OIDC_CLIENT_SECRET=CLIENT_SECRET,
        TRITONLAB_OIDC_ISSUER=oidc_provider.issuer,
        PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    env.pop("TRITONLAB_DATABASE_URL", None)
    subprocess.run(
        [sys.executable, "-m", "tritonlab", "classroom", "init", "--name", "SSO class"],
        env=env,
        capture_output=True,
        check=True,
        timeout=120,
    )
    settings = tmp / "oidc.toml"
    settings.write_text(
        '[oidc]\nclient_id = "tritonlab"\nscopes = "openid email profile groups"\n'
        f'allowed_groups = ["{GROUP}"]\nname = "Uni Login"\n'
    )
    port = oidc_provider.served.rsplit(":", 1)[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tritonlab", "serve", "--classroom", "--port", port, "--no-browser"]
        + ["--allow-unhardened", "--public-url", oidc_provider.served, "--oidc-config", str(settings)]
        + ["--oidc-only", "--oidc-allowed-domain", "uni.example"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen: list[str] = []
    deadline = time.monotonic() + 120
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if re.search(r"http://127\.0\.0\.1:\d+/login", line):
            break
    else:
        seen.append("(timed out)")
    if not seen or "/login" not in seen[-1]:
        proc.kill()
        pytest.fail("serve --classroom --oidc-only did not start:\n" + "".join(seen))
    assert any("Single sign-on: " + oidc_provider.issuer in s and "passwords off" in s for s in seen), seen
    yield oidc_provider.served
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def test_a_learner_logs_in_through_the_provider_and_out_again(served: str) -> None:
    expect = playwright_api.expect
    errors: list[str] = []
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.set_default_timeout(60_000)
        page.goto(
            served + "/lessons/05-vector-add"
        )  # not logged in: sent to the log-in page, which remembers where
        expect(page).to_have_url(re.compile(r"/login\?next="))
        expect(page.locator("#login-form")).to_have_count(0)  # --oidc-only: no password form
        page.click("#sso-login")
        page.fill("#login", "anna")  # the provider's own page
        page.click("#sign-in")
        expect(page).to_have_url(served + "/lessons/05-vector-add")
        expect(page.locator("#user-pill")).to_contain_text("Anna Lima (")
        me = page.request.get(served + "/api/me")
        assert me.ok and me.json()["username"] == "anna"
        page.click("#user-pill")  # the account menu (templates/base.html) holds Log out
        page.click("#logout")
        page.get_by_role("button", name="Yes, sign me out").click()  # the provider's end-session page
        expect(page).to_have_url(served + "/login")
        assert page.request.get(served + "/api/me").status == 401  # ended on the server
        page.click("#sso-login")  # and at the provider: it asks who you are again
        expect(page.locator("#login")).to_be_visible()
        browser.close()
    assert not errors, errors
