"""A real OpenID provider for the OIDC tests: panva's `oidc-provider` (npm, pinned by tests/oidc/package-lock.json,
installed by `make test-deps` or by the test session itself) run by Node.js on loopback, once per test session (tests/oidc/provider.mjs says
what it serves), and a browser that walks a class's log-in through it.

The class server is the in-process app (FastAPI's TestClient at BASE); the provider is a separate process
reached over real HTTP by both the browser and the class server (which reads its discovery document and keys
and redeems codes at its token endpoint). Skipped, with the reason, where node or the npm package is missing."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
import sqlalchemy as sa
from classroom_app import rows_of
from fastapi.testclient import TestClient
from test_web_api import make_course

from tritonlab.classroom import oidc
from tritonlab.classroom.room import Classroom
from tritonlab.service import Service
from tritonlab.web import create_app

HERE = Path(__file__).resolve().parent / "oidc"
BASE = "http://127.0.0.1:8000"  # the class server, as the TestClient and the provider's redirects name it
CLIENT_SECRET = "class-client-secret-0123456789abcdef"
OTHER_SECRET = "other-app-secret-0123456789abcdef"
OTHER_REDIRECT = "http://127.0.0.1:9/other-app/callback"  # never visited: the test reads the redirect
GROUP, TEACHERS = "gpu-101", "gpu-101-teachers"
ACCOUNTS = {  # login name at the provider -> its claims
    "anna": {"sub": "sub-anna", "email": "anna@uni.example", "email_verified": True, "name": "Anna Lima"},
    "ben": {"sub": "sub-ben", "email": "Ben@Uni.Example", "email_verified": True, "name": "Ben Silva"},
    "prof": {"sub": "sub-prof", "email": "prof@uni.example", "email_verified": True, "name": "Prof Ada"},
    "head": {"sub": "sub-head", "email": "head@uni.example", "email_verified": True, "name": "Head Teacher"},
    "carla": {"sub": "sub-carla", "email": "carla@uni.example", "email_verified": True, "name": "Carla"},
    "eve": {"sub": "sub-eve", "email": "eve@elsewhere.example", "email_verified": True, "name": "Eve"},
    "mal": {"sub": "sub-mal", "email": "mal@uni.example", "email_verified": False, "name": "Mal"},
    "outsider": {"sub": "sub-out", "email": "out@uni.example", "email_verified": True, "name": "Out"},
}
GROUPS = {"anna": [GROUP], "ben": [GROUP], "prof": [GROUP, TEACHERS], "head": [GROUP], "carla": [GROUP]}
GROUPS |= {"eve": [GROUP], "mal": [GROUP], "outsider": ["another-course"]}


@dataclass
class Provider:
    issuer: str  # the class's provider: claims in the ID token
    other_issuer: str  # a second provider in the same process, same signing key, thin ID tokens
    process: subprocess.Popen
    log: Path
    served: (
        str  # the address a real server must use to be this provider's client (tests/test_oidc_browser.py)
    )
    proxied: str  # the public https URL nginx must serve a real server on (tests/test_oidc_nginx.py)

    def control(self, what: str, body: dict, issuer: str | None = None) -> None:
        r = httpx.post(f"{issuer or self.issuer}/__test__/{what}", json=body, timeout=10)
        assert r.status_code == 204, r.text

    def tamper(self, **body: object) -> None:
        """The next token response (of either issuer) is altered on its way to the class server."""
        self.control("tamper", body)

    def clock(self, offset_s: float) -> None:
        self.control("clock", {"offset_s": offset_s})

    def set_claims(self, login: str, **claims: object) -> None:
        self.control("account", {"login": login, "claims": claims})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


NODE_MAJOR = 20  # the Node.js line the pinned oidc-provider is tested with here


def install_provider() -> None:
    """`npm ci` in tests/oidc when the pinned package is missing or older than the lock file (what `make
    test-deps` does), so the OIDC tests run from a fresh clone; skips with the reason when it cannot."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(
            f"{'node' if node is None else 'npm'} is not installed: the OIDC tests need Node.js "
            f"{NODE_MAJOR}+ with npm (`make system-deps` installs Debian's where apt-get may)"
        )
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    major = re.match(r"v(\d+)\.", version)
    if major is None or int(major.group(1)) < NODE_MAJOR:
        pytest.skip(
            f"node {version or '(no version)'} is older than {NODE_MAJOR}: the OIDC tests need Node.js 20+"
        )
    stamp, lock = HERE / "node_modules" / ".package-lock.json", HERE / "package-lock.json"
    with open(HERE / ".install.lock", "a") as held:  # one install at a time (parallel test sessions)
        fcntl.flock(held, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.stat().st_mtime >= lock.stat().st_mtime:
            return
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=600,
        )
    if done.returncode != 0 or not (HERE / "node_modules" / "oidc-provider" / "package.json").is_file():
        pytest.skip(f"npm ci in tests/oidc failed, so the OIDC tests cannot run:\n{done.stderr[-2000:]}")


def start_provider() -> Iterator[Provider]:
    install_provider()
    node = shutil.which("node") or "node"
    folder = Path(tempfile.mkdtemp(prefix="tritonlab-oidc-"))
    accounts = {name: {**claims, "groups": GROUPS[name]} for name, claims in ACCOUNTS.items()}
    served = f"http://127.0.0.1:{free_port()}"  # a real `serve --classroom` for the browser test
    proxied = f"https://localhost:{free_port()}"  # nginx in front of one (tests/test_oidc_nginx.py)
    config = {
        "redirect_uris": [f"{BASE}/auth/callback", f"{served}/auth/callback", f"{proxied}/auth/callback"],
        "post_logout_redirect_uris": [f"{BASE}/login", f"{served}/login", f"{proxied}/login"],
        "client_secret": CLIENT_SECRET,
        "other_secret": OTHER_SECRET,
        "other_redirect_uri": OTHER_REDIRECT,
        "accounts": accounts,
    }
    (folder / "config.json").write_text(json.dumps(config))
    log = folder / "provider.log"
    with open(log, "wb") as err:
        process = subprocess.Popen(
            [node, str(HERE / "provider.mjs"), str(folder / "config.json")],
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=HERE,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NODE_ENV": "test"},
        )
    try:
        ready, _, _ = select.select([process.stdout], [], [], 30)
        line = process.stdout.readline() if ready else b""  # type: ignore[union-attr]
        if not line:
            pytest.fail(f"the OpenID provider did not start:\n{log.read_text(errors='replace')[-3000:]}")
        found = json.loads(line)
        yield Provider(found["issuer"], found["other_issuer"], process, log, served, proxied)
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)


# ---- a person's browser ---------------------------------------------------------------------------------------


@dataclass
class Browser:
    """One browser: its cookies at the class server (`app`, a TestClient) and at the provider (`idp`)."""

    app: object  # fastapi.testclient.TestClient
    idp: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=15))

    def start(self, next_path: str = "/") -> str:
        """GET /auth/start: the provider URL the class server sends this browser to."""
        r = self.app.get("/auth/start", params={"next": next_path}, follow_redirects=False)  # type: ignore[attr-defined]
        assert r.status_code == 303, r.text
        return r.headers["location"]

    def authorize(self, url: str, account: str | None) -> str:
        """Walk the provider from its authorization URL, logging in as `account` when it asks, to the URL it
        sends the browser back to (the class server's callback, or wherever the request said)."""
        for _ in range(10):
            r = self.idp.get(url, follow_redirects=False)
            assert r.status_code in (302, 303), f"{r.status_code} at {url}: {r.text[:500]}"
            location = str(r.url.join(r.headers["location"]))
            if "/interaction/" not in location:
                if not location.startswith(str(r.url.copy_with(path="/", query=None, fragment=None))):
                    return location  # left the provider
                url = location
                continue
            assert account is not None, "the provider asks for a log-in"
            uid = location.rstrip("/").rsplit("/", 1)[1]
            r = self.idp.post(location + "/login", data={"login": account}, follow_redirects=False)
            assert r.status_code in (302, 303), r.text
            url = str(r.url.join(r.headers["location"]))
            assert uid in url
        raise AssertionError("the provider kept redirecting")

    def callback(self, url: str):  # noqa: ANN201
        parts = urlsplit(url)
        assert url.startswith(BASE + "/auth/callback"), url
        return self.app.get(f"{parts.path}?{parts.query}", follow_redirects=False)  # type: ignore[attr-defined]

    def login(self, account: str, next_path: str = "/"):  # noqa: ANN201
        return self.callback(self.authorize(self.start(next_path), account))


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def with_query(url: str, **changes: str | None) -> str:
    """The URL with query parameters replaced (None: removed)."""
    parts = urlsplit(url)
    params = {k: v for k, v in query(url).items() if k not in changes} | {
        k: v for k, v in changes.items() if v is not None
    }
    return parts._replace(query=urlencode(params)).geturl()


def token_response(
    provider_issuer: str,
    client_id: str,
    secret: str,
    redirect: str,
    browser: Browser,
    account: str,
    nonce: str,
    scope: str,
) -> dict:
    """A genuine token response of the provider at `provider_issuer` for another flow than the class's: the
    test's own client logs `account` in with the class's `nonce` and redeems the code itself."""
    import base64
    import hashlib
    import secrets

    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    params = {
        "client_id": client_id,
        "response_type": "code",
        "redirect_uri": redirect,
        "scope": scope,
        "state": secrets.token_urlsafe(8),
        "nonce": nonce,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        # the claims in the ID token itself, even from the provider whose ID tokens are otherwise thin
        "claims": json.dumps({"id_token": {c: None for c in ("email", "email_verified", "name", "groups")}}),
    }
    back = browser.authorize(f"{provider_issuer}/auth?{urlencode(params)}", account)
    code = query(back)["code"]
    r = httpx.post(
        f"{provider_issuer}/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect,
            "code_verifier": verifier,
        },
        auth=(client_id, secret),
        timeout=15,
    )
    assert r.status_code == 200, r.text
    return r.json()


def csrf_headers(client) -> dict[str, str]:  # noqa: ANN001
    token = client.cookies.get("tritonlab_csrf")
    assert token, "no csrf cookie: not logged in"
    return {"Origin": BASE, "X-CSRF-Token": token}


def form_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', html))


# ---- a class that logs in through the provider -----------------------------------------------------------------

KEPT = ("users", "user_identities", "sessions")


@dataclass
class SSOClass:
    app: object
    room: Classroom
    teacher_password: str
    join_code: str

    def browser(self) -> Browser:
        return Browser(TestClient(self.app, base_url=BASE))

    def rows(self) -> dict[str, list[tuple]]:
        """Accounts, provider links and sessions: what a refused log-in must leave as it was."""
        everything = rows_of(self.room.db.engine, {"sessions": {"last_seen"}})
        return {name: everything[name] for name in KEPT}

    def user(self, username: str) -> dict:
        with self.room.db.engine.connect() as conn:
            row = (
                conn.execute(sa.text("SELECT * FROM users WHERE username = :u"), {"u": username})
                .mappings()
                .one()
            )
        return dict(row)

    def identities(self) -> list[dict]:
        with self.room.db.engine.connect() as conn:
            return [dict(r) for r in conn.execute(sa.text("SELECT * FROM user_identities")).mappings()]


@contextmanager
def sso_class(root: Path, url: str, issuer: str, **settings: object) -> Iterator[SSOClass]:
    """The classroom app over the fixture course, its database at `url`, logging in through `issuer` as the
    confidential client `tritonlab`: uni.example addresses only, the group gpu-101-teachers are teachers."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TRITONLAB_HOME", str(root / "home"))
        env.setenv("TRITONLAB_BACKEND", "interpreter")
        env.delenv("TRITONLAB_LANG", raising=False)
        service = Service(course_dir=make_course(root), workspace_dir=root / "ws", lang="en")
        room = Classroom(url, adopt=Path("/nonexistent"))
        try:
            made = room.init("Test class")
            values = {
                "issuer": issuer,
                "client_id": "tritonlab",
                "client_secret": CLIENT_SECRET,
                "allowed_domains": ["uni.example"],
                "teacher_groups": [TEACHERS],
                "scopes": "openid email profile groups",  # the test provider releases groups for this scope
                "name": "Uni Login",
            }
            room.use_sso(oidc.build({**values, **settings}, BASE))
            app = create_app(service, "unused-token-0123456789", classroom=room, public_url=BASE)
            with TestClient(app, base_url=BASE):
                yield SSOClass(app, room, made["teacher"]["password"], made["join_path"].rsplit("/", 1)[1])
        finally:
            service.close()
            room.close()


def me(browser: Browser) -> dict:
    r = browser.app.get("/api/me")  # type: ignore[attr-defined]
    assert r.status_code == 200, r.text
    return r.json()
