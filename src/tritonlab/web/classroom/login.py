"""Logging in to a class: `POST /api/login` (the password checked in the hashing executor, with back-off),
`/api/logout`, `/api/me`, joining with the class's link (`/join/CODE`, `POST /api/join/CODE`), and the log-in
and join pages. A log-in or join sets the session cookies the guard (web/classroom/guard.py) reads.
"""

from __future__ import annotations

import asyncio
import hmac

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from tritonlab.classroom.auth import HASHING, LoginRefused
from tritonlab.classroom.room import AccountError, Classroom, User
from tritonlab.web import lang as weblang
from tritonlab.web.classroom.guard import SESSION_LIFETIME_S, ClassroomGuard

router = APIRouter()


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
def join(code: str, body: JoinBody, request: Request) -> JSONResponse:
    try:
        user = classroom_of(request).join(code, body.username, body.display_name, body.password)
    except LookupError as exc:
        raise HTTPException(404, weblang.classroom_text(request, exc)) from None
    except PermissionError as exc:
        raise HTTPException(403, weblang.classroom_text(request, exc)) from None
    except AccountError as exc:
        raise HTTPException(400, weblang.classroom_text(request, exc)) from None
    return _logged_in(request, user)


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
    target = request.query_params.get("next", "/")
    if not target.startswith("/") or target.startswith("//"):
        target = "/"
    klass = classroom_of(request).the_class() or {}
    title = weblang.tr(request, "classroom_ui.login.title")
    return page(request, "classroom_login.html", title=title, next=target, class_name=klass.get("name", ""))


@router.get("/join/{code}", response_class=HTMLResponse)
def join_page(code: str, request: Request) -> Response:
    klass = classroom_of(request).the_class()
    if klass is None or not hmac.compare_digest(klass["join_code"], code):
        raise HTTPException(404, weblang.tr(request, "classroom_ui.errors.no_join_link"))
    return page(
        request,
        "classroom_join.html",
        title=weblang.tr(request, "classroom_ui.join.title"),
        code=code,
        class_name=klass["name"],
        join_open=klass["join_open"],
    )
