"""The classroom's request guard (ASGI middleware): `ClassroomGuard` is web/security.py's `Guard` with
sessions in place of the one token.

Host check, body cap and security headers as for a single learner; a signed HttpOnly session cookie
(`Secure` over HTTPS, SameSite=Lax); on every state-changing request the Origin check *and* `X-CSRF-Token`
equal to the session's csrf value (also in the readable cookie `tritonlab_csrf`); `/teacher` and
`/api/classroom/` for teachers only. It puts the user and a `LearnerService` for them in `request.state`
(and the user in `current_user`), so every existing route acts on that learner only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from urllib.parse import SplitResult, quote, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from tritonlab.classroom.room import Classroom, User
from tritonlab.i18n import t
from tritonlab.service import Service
from tritonlab.web.classroom.ownership import current_lang, current_user
from tritonlab.web.security import (
    LOOPBACK_HOSTS,
    UNSAFE_METHODS,
    Guard,
    host_name,
    new_token,
    origin_parts,
    same_secret,
)

SESSION_LIFETIME_S = 7 * 24 * 3600.0
SESSION_IDLE_S = 12 * 3600.0
CSRF_COOKIE = "tritonlab_csrf"
PUBLIC_EXACT = {"/login", "/api/login", "/favicon.ico", "/settings/lang"}  # the last only sets a cookie
PUBLIC_PREFIXES = ("/static/", "/join/", "/api/join/", "/auth/")  # /auth/: oidc.py
CSRF_EXEMPT = {"/settings/lang", "/api/login"}  # plain form post / no session yet: Origin check only
TEACHER_PREFIXES = ("/teacher", "/api/classroom/")


def _public(path: str) -> bool:
    return path in PUBLIC_EXACT or path.startswith(PUBLIC_PREFIXES)


class ClassroomGuard(Guard):
    def __init__(
        self,
        app: ASGIApp,
        classroom: Classroom,
        service: Service,
        allowed_hosts: Iterable[str] | None = LOOPBACK_HOSTS,
        lang: str = "en",
        public_url: str | None = None,
    ) -> None:
        super().__init__(app, token=new_token(), allowed_hosts=allowed_hosts, lang=lang)
        self.classroom = classroom
        self.service = service
        self.secret = classroom.db.secret()
        self.public = urlsplit(public_url) if public_url else None
        self.public_origin = _origin_key(self.public) if self.public else None
        self.secure = bool(self.public and self.public.scheme == "https")
        self.session_cookie = "tritonlab_session_" + hashlib.sha256(self.secret).hexdigest()[:8]
        if self.allowed is not None and self.public and self.public.hostname:
            self.allowed.add(self.public.hostname.lower())

    def sign(self, session_id: str) -> str:
        mac = hmac.new(self.secret, session_id.encode(), hashlib.sha256).hexdigest()[:32]
        return f"{session_id}.{mac}"

    def unsign(self, value: str) -> str | None:
        session_id, _, mac = value.rpartition(".")
        if not session_id:
            return None
        good = hmac.new(self.secret, session_id.encode(), hashlib.sha256).hexdigest()[:32]
        return session_id if same_secret(mac, good) else None

    def is_secure(self, scope: Scope) -> bool:
        return self.secure or scope.get("scheme") == "https"

    def session_cookies(self, scope: Scope, session_id: str, csrf: str) -> list[str]:
        secure = "; Secure" if self.is_secure(scope) else ""
        age = int(SESSION_LIFETIME_S)
        return [
            f"{self.session_cookie}={self.sign(session_id)}; Path=/; HttpOnly; SameSite=Lax; Max-Age={age}{secure}",
            f"{CSRF_COOKIE}={csrf}; Path=/; SameSite=Lax; Max-Age={age}{secure}",
        ]

    def clear_cookies(self, scope: Scope) -> list[str]:
        secure = "; Secure" if self.is_secure(scope) else ""
        return [
            f"{self.session_cookie}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}",
            f"{CSRF_COOKIE}=; Path=/; SameSite=Lax; Max-Age=0{secure}",
        ]

    def _from_this_server(self, headers: dict[str, str], host: str, scheme: str) -> bool:
        """Whether a state-changing request comes from the class's own pages: its Origin (else Referer) is the
        `--public-url`'s origin, or exactly this request's scheme, host and port. Under the public URL's name
        only the public origin counts: behind the documented proxy every request arrives as http with that
        Host, and http://<that name> is a page a network attacker can serve."""
        parts = origin_parts(headers)
        if parts is None:
            return False
        if self.public is not None:
            if _origin_key(parts) == self.public_origin:
                return True
            if host_name(host) == (self.public.hostname or "").lower():
                return False
        return self._same_scheme(headers, scheme) and self._same_origin(headers, host)

    def _who(self, session_id: str | None) -> tuple[User | None, str, object | None]:
        """(user, csrf, the learner's service) of a live session, or (None, "", None). Blocking: database."""
        found = self.classroom.db.session(session_id, SESSION_IDLE_S) if session_id else None
        if not found:
            return None, "", None
        user, csrf = found
        return user, csrf, self.classroom.learner_service(self.service, user)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        import secrets

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        nonce = secrets.token_urlsafe(12)
        state = scope.setdefault("state", {})
        state["nonce"] = nonce
        state["classroom_guard"] = self
        method, path = scope["method"], scope.get("path", "/")
        is_api = path.startswith("/api/")
        host = headers.get("host", "")
        lang = self._lang(headers)
        if self.allowed is not None and host_name(host) not in self.allowed:
            await self._deny(send, 403, "host", is_api, nonce, lang, host=host)
            return
        # The body is checked before anything else (with or without a session, on every route): over the cap,
        # announced or sent chunked, it is a 413; nested too deep, a 422. Never read past the cap.
        if self._announced_too_large(headers):
            await self._deny(send, 413, "too_large", True, nonce, lang, **self.too_large_fmt())
            return
        checked = await self._read_checked_body(scope, headers, receive, send, nonce, lang, is_api)
        if checked is None:
            return
        receive = checked

        raw = self._cookie(headers, self.session_cookie)
        session_id = self.unsign(raw) if raw else None
        # The session's row (and the learner's service, which reads the database too) in a worker thread: a
        # database round trip on the event loop — an SQLite write lock held by a save, a PostgreSQL query —
        # would stall every request in flight (the class load test's page p95 was seconds before this).
        user, csrf, learner = await run_in_threadpool(self._who, session_id)
        if user is None and not _public(path):
            if is_api or method != "GET":
                await _json(
                    send, 401, {"error": t("web.guard.login_needed", lang), "reason": "login needed"}, nonce
                )
            else:
                await _redirect(send, "/login?next=" + quote(path, safe="/"), nonce)
            return
        if method in UNSAFE_METHODS:
            if not self._from_this_server(headers, host, scope.get("scheme", "http")):
                await self._deny(send, 403, "cross_origin", is_api, nonce, lang)
                return
            if user is not None and path not in CSRF_EXEMPT:
                sent = headers.get("x-csrf-token", "")
                if not (sent and same_secret(sent, csrf)):
                    await _json(send, 403, {"error": t("web.guard.csrf", lang), "reason": "csrf"}, nonce)
                    return
        if path.startswith(TEACHER_PREFIXES) and (user is None or not user.is_teacher):
            message = t("web.guard.teacher_only", lang)
            if is_api:
                await _json(send, 403, {"error": message, "reason": "teacher only"}, nonce)
            else:  # a page: the app's own error page, in the browser's language, with the way back
                await _page(send, scope, 403, message, nonce, lang)
            return

        state["user"] = user
        state["session_id"] = session_id
        state["csrf"] = csrf
        if learner is not None:
            state["service"] = learner
        token, said = current_user.set(user), current_lang.set(lang)
        try:
            await self.app(scope, self._capped(receive), self._with_headers(send, nonce))
        finally:
            current_user.reset(token)
            current_lang.reset(said)


def _origin_key(url: SplitResult) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) of an origin, the default port filled in; None with userinfo or no host."""
    if "@" in url.netloc or not url.hostname:
        return None
    return url.scheme, url.hostname, url.port or {"http": 80, "https": 443}.get(url.scheme)


async def _json(send: Send, status: int, data: dict, nonce: str) -> None:
    from tritonlab.web.security import security_headers

    body = json.dumps(data).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + security_headers(nonce)}
    )
    await send({"type": "http.response.body", "body": body})


async def _page(send: Send, scope: Scope, status: int, message: str, nonce: str, lang: str) -> None:
    from tritonlab.web.pages import templates
    from tritonlab.web.security import security_headers

    app = scope.get("app")
    version = getattr(getattr(app, "state", None), "static_version", "")
    body = templates.get_template("error.html").render(
        status=status, message=message, lang=lang, nonce=nonce, static_version=version
    )
    data = body.encode()
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(data)).encode())]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + security_headers(nonce)}
    )
    await send({"type": "http.response.body", "body": data})


async def _redirect(send: Send, location: str, nonce: str) -> None:
    from tritonlab.web.security import security_headers

    headers = [(b"location", location.encode("latin-1")), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": 303, "headers": headers + security_headers(nonce)})
    await send({"type": "http.response.body", "body": b""})
