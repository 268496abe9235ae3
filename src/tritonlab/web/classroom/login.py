"""Logging in to a class: `POST /api/login` (the password checked in the hashing pool, with back-off),
`/api/logout`, `/api/me`, joining with the class's link (`/join/CODE`, `POST /api/join/CODE`), and the log-in
and join pages. A log-in or join sets the session cookies the guard (web/classroom/guard.py) reads.

Every hash waits in `classroom.hash_pool` (bounded, fair per client address: 503 with Retry-After when there is
no room); joins are also limited to JOINS_PER_MINUTE per client address (429 with Retry-After). The client
address comes from `client_address` alone: the peer, or the client a trusted proxy named (web/proxy.py).
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from tritonlab.classroom.auth import HASHING, LoginRefused
from tritonlab.classroom.hash_pool import PoolFull
from tritonlab.classroom.room import AccountError, Classroom, User
from tritonlab.web import lang as weblang
from tritonlab.web.classroom.guard import SESSION_LIFETIME_S, ClassroomGuard
from tritonlab.web.classroom.ratelimit import PerKey
from tritonlab.web.redirects import same_origin_path
from tritonlab.web.security import same_secret

router = APIRouter()
JOINS_PER_MINUTE = 20  # joins with the right code per client address (a class behind one NAT joins in turns)


def join_limit() -> PerKey:
    """The app's join limit (web/classroom/__init__.install keeps one per app)."""
    return PerKey(JOINS_PER_MINUTE, 60.0)


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
        raise HTTPException(401, weblang.tr(request, "web.guard.login_needed"))
    return user


def client_address(request: Request) -> str:
    """The client's address, as the log-in back-off, the hashing pool's fair share and the join limit key it:
    the one place that reads it. Behind a trusted proxy, web/proxy.py has already put the real client there."""
    return request.client.host if request.client else "?"


def too_busy(exc: PoolFull) -> JSONResponse:
    wait = int(exc.retry_after)
    return JSONResponse(
        {"error": f"{exc} (in about {wait} s)", "retry_after": wait},
        status_code=503,
        headers={"Retry-After": str(wait)},
    )


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
    """The password check waits in the hashing pool (classroom/hash_pool.py), so a burst of log-ins never
    takes the request threads that serve pages, and a flood from one address waits in its own line."""
    classroom = classroom_of(request)
    address = client_address(request)
    try:
        user = await HASHING.run(address, classroom.auth.authenticate, body.username, body.password, address)
    except PoolFull as exc:
        return too_busy(exc)
    except LoginRefused as exc:
        HASHING.refused(address)
        if exc.retry_after > 0:
            wait = int(exc.retry_after) + 1
            return JSONResponse(
                {"error": f"{weblang.classroom_text(request, exc)}: {wait} s", "retry_after": wait},
                status_code=429,
                headers={"Retry-After": str(wait)},
            )
        return JSONResponse({"error": weblang.classroom_text(request, exc)}, status_code=401)
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
async def join(code: str, body: JoinBody, request: Request) -> JSONResponse:
    """A wrong code or a closed link is answered at once (cheap: no hash); a join with the right code counts
    against the address's JOINS_PER_MINUTE, then the account is made in the hashing pool. Its username is the
    name chosen plus a number (Classroom.join), the same answer for every name."""
    address = client_address(request)
    classroom = classroom_of(request)
    try:
        await run_in_threadpool(classroom.check_join, code)
    except LookupError as exc:
        raise HTTPException(404, weblang.classroom_text(request, exc)) from None
    except PermissionError as exc:
        raise HTTPException(403, weblang.classroom_text(request, exc)) from None
    wait = request.app.state.join_limit.hit(address)
    if wait:
        seconds = int(wait) + 1
        return JSONResponse(
            {
                "error": f"too many join requests from your address: try again in {seconds} s",
                "retry_after": seconds,
            },
            status_code=429,
            headers={"Retry-After": str(seconds)},
        )
    try:
        user = await HASHING.run(
            address, classroom.join, code, body.username, body.display_name, body.password
        )
    except PoolFull as exc:
        return too_busy(exc)
    except LookupError as exc:
        raise HTTPException(404, weblang.classroom_text(request, exc)) from None
    except PermissionError as exc:
        raise HTTPException(403, weblang.classroom_text(request, exc)) from None
    except AccountError as exc:
        HASHING.refused(address)
        raise HTTPException(400, weblang.classroom_text(request, exc)) from None
    return await run_in_threadpool(_logged_in, request, user)


def page(request: Request, name: str, **context: object) -> HTMLResponse:
    """A classroom page in the browser's language, with the language switch: the log-in and join pages as
    they are; the teacher's pages pass the course chrome (pages.base_context) in `context`."""
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
    target = same_origin_path(request.query_params.get("next", "/"))  # never another site (web/redirects.py)
    klass = classroom_of(request).the_class() or {}
    title = weblang.tr(request, "classroom_ui.login.title")
    return page(request, "classroom_login.html", title=title, next=target, class_name=klass.get("name", ""))


@router.get("/join/{code}", response_class=HTMLResponse)
def join_page(code: str, request: Request) -> Response:
    klass = classroom_of(request).the_class()
    if klass is None or not same_secret(klass["join_code"], code):
        raise HTTPException(404, weblang.tr(request, "classroom_ui.errors.no_join_link"))
    return page(
        request,
        "classroom_join.html",
        title=weblang.tr(request, "classroom_ui.join.title"),
        code=code,
        class_name=klass["name"],
        join_open=klass["join_open"],
    )
