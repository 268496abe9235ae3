"""`serve --classroom`: accounts instead of the one token, per-learner state, the teacher's view.

- `ClassroomGuard` (ASGI middleware, a `Guard` with sessions in place of the token): Host check, body cap and
  security headers as before; a signed HttpOnly session cookie (`Secure` over HTTPS, SameSite=Lax); on every
  state-changing request the Origin check *and* `X-CSRF-Token` equal to the session's csrf value (also in the
  readable cookie `tritonlab_csrf`); `/teacher` and `/api/classroom/` for teachers only. It puts the user and
  a `LearnerService` for them in `request.state`, so every existing route acts on that learner only.
- `OwnedJobs` / `OwnedAttempts`: runs and quiz attempts remember who started them; anyone else gets 404.
  At most one run per learner at a time (FIFO across learners through the service's gate) and a per-learner
  rate limit, both answered 429 with a sentence and `Retry-After`.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterable
from contextvars import ContextVar
from urllib.parse import SplitResult, quote, urlsplit

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from markupsafe import Markup
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from tritonlab.classroom.auth import HASHING, LoginRefused
from tritonlab.classroom.room import AccountError, Classroom, User
from tritonlab.service import Service
from tritonlab.web import lang as weblang
from tritonlab.web.jobs import Job, Jobs
from tritonlab.web.markdown import highlight_code
from tritonlab.web.quiz_api import Attempt, Attempts
from tritonlab.web.security import (
    LOOPBACK_HOSTS,
    UNSAFE_METHODS,
    Guard,
    host_name,
    new_token,
    origin_parts,
)

SESSION_LIFETIME_S = 7 * 24 * 3600.0
SESSION_IDLE_S = 12 * 3600.0
CSRF_COOKIE = "tritonlab_csrf"
RUNS_PER_MINUTE = 20
PUBLIC_EXACT = {"/login", "/api/login", "/favicon.ico", "/settings/lang"}  # the last only sets a cookie
PUBLIC_PREFIXES = ("/static/", "/join/", "/api/join/", "/auth/")  # /auth/: web/oidc.py
CSRF_EXEMPT = {"/settings/lang", "/api/login"}  # plain form post / no session yet: Origin check only
TEACHER_PREFIXES = ("/teacher", "/api/classroom/")

current_user: ContextVar[User | None] = ContextVar("tritonlab_user", default=None)
router = APIRouter()


# ---- ownership of runs and quiz attempts ----------------------------------------------------------------


class OwnedJobs(Jobs):
    def __init__(self, per_minute: int = RUNS_PER_MINUTE) -> None:
        super().__init__()
        self.max_active = 512
        self.per_minute = per_minute
        self._owners: dict[str, int] = {}
        self._starts: dict[int, collections.deque[float]] = collections.defaultdict(collections.deque)
        self._admit = threading.Lock()

    def start(self, kind, label, work):  # type: ignore[no-untyped-def]
        user = current_user.get()
        if user is None:
            return super().start(kind, label, work)
        with self._admit:
            with self._lock:
                mine = [j for k, j in self._jobs.items() if not j.done and self._owners.get(k) == user.id]
            if mine:
                raise HTTPException(
                    429,
                    "You already have a run in flight: wait for it to finish or press Stop, then try again.",
                    headers={"Retry-After": "2"},
                )
            now = time.monotonic()
            recent = self._starts[user.id]
            while recent and now - recent[0] > 60:
                recent.popleft()
            if len(recent) >= self.per_minute:
                wait = int(60 - (now - recent[0])) + 1
                raise HTTPException(
                    429,
                    f"You started {self.per_minute} runs in the last minute: wait {wait} s before the next one.",
                    headers={"Retry-After": str(wait)},
                )
            recent.append(now)
            job = super().start(kind, label, work)
            with self._lock:
                self._owners[job.id] = user.id
        return job

    def get(self, job_id: str) -> Job | None:
        job = super().get(job_id)
        user = current_user.get()
        if job is None or user is None:
            return job
        with self._lock:
            return job if self._owners.get(job_id) == user.id else None


class OwnedAttempts(Attempts):
    def __init__(self) -> None:
        super().__init__()
        self._owners: dict[str, int | None] = {}

    def new(self, lesson, lang):  # type: ignore[no-untyped-def]
        attempt = super().new(lesson, lang)
        user = current_user.get()
        with self._lock:
            self._owners[attempt.id] = user.id if user else None
            for gone in [k for k in self._owners if k not in self._items]:
                del self._owners[gone]
        return attempt

    def get(self, attempt_id: str) -> Attempt | None:
        attempt = super().get(attempt_id)
        user = current_user.get()
        if attempt is None:
            return None
        with self._lock:
            return attempt if self._owners.get(attempt_id) == (user.id if user else None) else None


# ---- the guard ------------------------------------------------------------------------------------------


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
        return session_id if hmac.compare_digest(mac, good) else None

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
        length = headers.get("content-length")
        if length and length.isdigit() and int(length) > self.max_body:
            await self._deny(send, 413, "too_large", True, nonce, lang, kib=self.max_body // 1024)
            return

        raw = self._cookie(headers, self.session_cookie)
        session_id = self.unsign(raw) if raw else None
        # The session's row (and the learner's service, which reads the database too) in a worker thread: a
        # database round trip on the event loop — an SQLite write lock held by a save, a PostgreSQL query —
        # would stall every request in flight (the class load test's page p95 was seconds before this).
        user, csrf, learner = await run_in_threadpool(self._who, session_id)
        if user is None and not _public(path):
            if is_api or method != "GET":
                await _json(
                    send, 401, {"error": "log in first (POST /api/login)", "reason": "login needed"}, nonce
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
                if not (sent and hmac.compare_digest(sent, csrf)):
                    await _json(
                        send,
                        403,
                        {"error": "missing or wrong X-CSRF-Token header; reload the page", "reason": "csrf"},
                        nonce,
                    )
                    return
        if path.startswith(TEACHER_PREFIXES) and (user is None or not user.is_teacher):
            await _json(send, 403, {"error": "only a teacher may open this", "reason": "teacher only"}, nonce)
            return

        state["user"] = user
        state["session_id"] = session_id
        state["csrf"] = csrf
        if learner is not None:
            state["service"] = learner
        token = current_user.set(user)
        try:
            await self.app(scope, self._capped(receive), self._with_headers(send, nonce))
        finally:
            current_user.reset(token)


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


async def _redirect(send: Send, location: str, nonce: str) -> None:
    from tritonlab.web.security import security_headers

    headers = [(b"location", location.encode("latin-1")), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": 303, "headers": headers + security_headers(nonce)})
    await send({"type": "http.response.body", "body": b""})


# ---- routes: log in and out, join -----------------------------------------------------------------------


class LoginBody(BaseModel):
    username: str = Field(max_length=64)
    password: str = Field(max_length=1024)


class JoinBody(LoginBody):
    display_name: str = Field(default="", max_length=200)


def classroom_of(request: Request) -> Classroom:
    return request.app.state.classroom


def guard_of(request: Request) -> ClassroomGuard:
    return request.state.classroom_guard


def user_of(request: Request) -> User:
    user = getattr(request.state, "user", None)
    if user is None:
        raise HTTPException(401, "log in first")
    return user


def client_address(request: Request) -> str:
    return request.client.host if request.client else "?"


def _logged_in(request: Request, user: User) -> JSONResponse:
    classroom = classroom_of(request)
    session_id, csrf = classroom.db.create_session(user.id, SESSION_LIFETIME_S)
    response = JSONResponse({"username": user.username, "role": user.role, "csrf": csrf})
    for cookie in guard_of(request).session_cookies(request.scope, session_id, csrf):
        response.headers.append("set-cookie", cookie)
    response.headers["cache-control"] = "no-store"
    return response


@router.post("/api/login")
async def login(body: LoginBody, request: Request) -> JSONResponse:
    """The password check waits in the hashing executor (classroom/auth.py: HASHING), so a burst of log-ins
    never takes the request threads that serve pages."""
    classroom = classroom_of(request)
    loop = asyncio.get_running_loop()
    try:
        user = await loop.run_in_executor(
            HASHING, classroom.auth.authenticate, body.username, body.password, client_address(request)
        )
    except LoginRefused as exc:
        if exc.retry_after > 0:
            wait = int(exc.retry_after) + 1
            return JSONResponse(
                {"error": f"{exc}: {wait} s", "retry_after": wait},
                status_code=429,
                headers={"Retry-After": str(wait)},
            )
        return JSONResponse({"error": str(exc)}, status_code=401)
    old = getattr(request.state, "session_id", None)
    if old:
        await run_in_threadpool(classroom.db.end_session, old)
    return await run_in_threadpool(_logged_in, request, user)


@router.post("/api/logout")
def logout(request: Request) -> JSONResponse:
    session_id = getattr(request.state, "session_id", None)
    if session_id:
        classroom_of(request).db.end_session(session_id)
    response = JSONResponse({"logged_out": True})
    for cookie in guard_of(request).clear_cookies(request.scope):
        response.headers.append("set-cookie", cookie)
    return response


@router.get("/api/me")
def me(request: Request) -> dict:
    user = user_of(request)
    return {**user.to_json(), "csrf": request.state.csrf}


@router.post("/api/join/{code}")
def join(code: str, body: JoinBody, request: Request) -> JSONResponse:
    try:
        user = classroom_of(request).join(code, body.username, body.display_name, body.password)
    except LookupError as exc:
        raise HTTPException(404, str(exc)) from None
    except PermissionError as exc:
        raise HTTPException(403, str(exc)) from None
    except AccountError as exc:
        raise HTTPException(400, str(exc)) from None
    return _logged_in(request, user)


def _page(request: Request, name: str, **context: object) -> HTMLResponse:
    """The log-in and join pages (no course chrome): in the browser's language, with the language switch."""
    from tritonlab import config, i18n
    from tritonlab.web.pages import LANGUAGE_NAMES, templates

    lang = weblang.request_lang(request)
    return templates.TemplateResponse(
        request,
        name,
        {
            "nonce": request.state.nonce,
            "static_version": request.app.state.static_version,
            "lang": lang,
            "languages": [(code, LANGUAGE_NAMES[code]) for code in config.LANGUAGES],
            "js_strings": {"lang": lang, "strings": i18n.js_strings(lang)},
            **context,
        },
    )


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request) -> Response:
    target = request.query_params.get("next", "/")
    if not target.startswith("/") or target.startswith("//"):
        target = "/"
    klass = classroom_of(request).the_class() or {}
    title = weblang.tr(request, "classroom_ui.login.title")
    return _page(request, "classroom_login.html", title=title, next=target, class_name=klass.get("name", ""))


@router.get("/join/{code}", response_class=HTMLResponse)
def join_page(code: str, request: Request) -> Response:
    klass = classroom_of(request).the_class()
    if klass is None or not hmac.compare_digest(klass["join_code"], code):
        raise HTTPException(404, "no class has this join link")
    return _page(
        request,
        "classroom_join.html",
        title=weblang.tr(request, "classroom_ui.join.title"),
        code=code,
        class_name=klass["name"],
        join_open=klass["join_open"],
    )


# ---- the teacher's view ---------------------------------------------------------------------------------


class NewUserBody(BaseModel):
    username: str = Field(max_length=64)
    display_name: str = Field(default="", max_length=200)
    role: str = Field(default="learner", max_length=16)


class FlagBody(BaseModel):
    value: bool


def _account(request: Request, user_id: int) -> User:
    try:
        return classroom_of(request).user(user_id)
    except AccountError:
        raise HTTPException(404, f"no account {user_id}") from None


@router.get("/teacher", response_class=HTMLResponse)
def teacher_page(request: Request) -> Response:
    from tritonlab.web.pages import base_context, service_of

    service = service_of(request)
    classroom = classroom_of(request)
    context = base_context(request, service, weblang.tr(request, "classroom_ui.teacher.title"))
    return _page(
        request,
        "classroom_teacher.html",
        **{k: v for k, v in context.items() if k != "request"},
        klass=classroom.the_class(),
        matrix=classroom.matrix(service.course),
        users=[u.to_json() for u in classroom.users()],
        me=user_of(request),
        when=_when,
        leaderboard_on=classroom.leaderboard_enabled(),
    )


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if at else "—"


@router.get("/teacher/learners/{user_id}/code/{exercise_id}", response_class=HTMLResponse)
def teacher_code_page(user_id: int, exercise_id: str, request: Request) -> Response:
    from tritonlab.web.pages import base_context, service_of

    service = service_of(request)
    learner = _account(request, user_id)
    try:
        exercise = service.exercise(exercise_id)
    except KeyError:
        raise HTTPException(404, f"no exercise {exercise_id}") from None
    text, version = classroom_of(request).learner_code(learner, exercise, service.course)
    context = base_context(request, service, f"{learner.username}: {exercise.id}")
    return _page(
        request,
        "classroom_code.html",
        **{k: v for k, v in context.items() if k != "request"},
        learner=learner,
        exercise=exercise.id,
        # Pygments escapes every character of the learner's text; Markup only marks its own <span>s as HTML
        code_html=Markup("<pre>") + Markup(highlight_code(text, "python")) + Markup("</pre>"),
        version=version,
    )


@router.get("/api/classroom/progress.json")
def progress_json(request: Request) -> dict:
    return classroom_of(request).matrix(request.app.state.service.course)


@router.get("/api/classroom/progress.csv")
def progress_csv(request: Request) -> PlainTextResponse:
    text = classroom_of(request).progress_csv(request.app.state.service.course)
    return PlainTextResponse(
        text,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="progress.csv"'},
    )


@router.get("/api/classroom/users")
def list_users(request: Request) -> dict:
    return {"users": [u.to_json() for u in classroom_of(request).users()]}


@router.post("/api/classroom/users")
def add_user(body: NewUserBody, request: Request) -> dict:
    try:
        user, password = classroom_of(request).add(body.username, body.display_name, body.role)
    except AccountError as exc:
        raise HTTPException(400, str(exc)) from None
    return {**user.to_json(), "password": password}


@router.post("/api/classroom/users/{user_id}/password")
def reset_password(user_id: int, request: Request) -> dict:
    user = _account(request, user_id)
    return {"username": user.username, "password": classroom_of(request).reset_password(user)}


@router.post("/api/classroom/users/{user_id}/disabled")
def set_disabled(user_id: int, body: FlagBody, request: Request) -> dict:
    user = _account(request, user_id)
    if user.id == user_of(request).id and body.value:
        raise HTTPException(400, "you cannot disable your own account")
    classroom_of(request).set_disabled(user, body.value)
    return {"username": user.username, "disabled": body.value}


@router.post("/api/classroom/users/{user_id}/unlock")
def unlock(user_id: int, request: Request) -> dict:
    user = _account(request, user_id)
    classroom_of(request).unlock(user)
    return {"username": user.username, "unlocked": True}


@router.post("/api/classroom/join")
def set_join(body: FlagBody, request: Request) -> dict:
    classroom_of(request).set_join_open(body.value)
    return {"join_open": body.value}


@router.get("/api/classroom/learners/{user_id}/code/{exercise_id}")
def learner_code(user_id: int, exercise_id: str, request: Request) -> dict:
    service = request.app.state.service
    learner = _account(request, user_id)
    try:
        exercise = service.exercise(exercise_id)
    except KeyError:
        raise HTTPException(404, f"no exercise {exercise_id}") from None
    text, version = classroom_of(request).learner_code(learner, exercise, service.course)
    return {"username": learner.username, "exercise": exercise.id, "text": text, "version": version}


def install(app, classroom: Classroom, service: Service, allowed_hosts, public_url: str | None) -> None:  # type: ignore[no-untyped-def]
    """Turn the app `create_app` is building into the classroom server."""
    app.state.classroom = classroom
    service.private_workspaces()  # the sandbox shows a run only its own learner's file (docs/classroom.md)
    app.state.jobs = OwnedJobs()
    app.state.quiz_attempts = OwnedAttempts()
    app.add_middleware(
        ClassroomGuard,
        classroom=classroom,
        service=service,
        allowed_hosts=allowed_hosts,
        lang=service.lang,
        public_url=public_url,
    )
