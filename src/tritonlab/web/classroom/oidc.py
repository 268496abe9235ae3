"""`serve --classroom` with an OpenID provider: the log-in's web routes (docs/classroom.md, "Single sign-on").

- `GET /auth/start?next=/path` sends the browser to the provider with a fresh state, nonce and PKCE challenge
  (classroom/sso.py keeps them on the server); a random cookie binds the log-in to this browser (HttpOnly,
  SameSite=Lax, Path=/auth/, ten minutes).
- `GET /auth/callback` hands the provider's answer (each parameter once, at most 2 KiB) and that cookie to
  classroom/sso.py, which checks them, redeems the code and verifies the ID token, and lets the class's
  Authenticator say who it is; then it opens the same session a password log-in opens.
- `POST /auth/logout` ends the session on the server and answers where the browser goes next: the provider's
  end-session page (RP-initiated logout) for an account linked to it, else /login.

Every refusal is a 401 (not proven) or 403 (proven, not allowed in) page saying why, and creates nothing.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from tritonlab.classroom.oidc import SSOError
from tritonlab.classroom.room import Classroom
from tritonlab.classroom.sso import PENDING_TTL_S, SSOLogin
from tritonlab.web.classroom.guard import SESSION_LIFETIME_S
from tritonlab.web.classroom.login import classroom_of, guard_of

MAX_PARAM = 2048  # longest code, state, error or iss taken from the callback's query
log = logging.getLogger("tritonlab.sso")
router = APIRouter()


def install(app, classroom: Classroom) -> None:  # type: ignore[no-untyped-def]
    """The provider's log-in behind the /auth/ routes, when the class has one (Classroom.sso); else None."""
    app.state.sso = SSOLogin.of(classroom)


def _sso(request: Request) -> SSOLogin:
    sso = request.app.state.sso
    if sso is None:
        raise HTTPException(404, "this class does not log in through an OpenID provider")
    return sso


def _browser_cookie(request: Request) -> str:
    return guard_of(request).session_cookie + "_sso"


def _safe_next(target: str | None) -> str:
    if not target or len(target) > 512 or not target.startswith("/") or target.startswith(("//", "/auth/")):
        return "/"
    return target if target.isprintable() and "\\" not in target else "/"


def _refuse(exc: SSOError) -> HTTPException:
    log.warning("provider log-in refused (%s): %s", exc.status, exc)
    return HTTPException(exc.status, f"Log-in refused: {exc}")


@router.get("/auth/start")
def start(request: Request) -> Response:
    """Send the browser to the provider; the log-in's state stays on the server, bound to this browser."""
    sso = _sso(request)
    try:
        url, browser = sso.start(_safe_next(request.query_params.get("next")))
    except SSOError as exc:
        raise _refuse(exc) from None
    response = RedirectResponse(url, status_code=303)
    secure = "; Secure" if guard_of(request).is_secure(request.scope) else ""
    response.headers.append(
        "set-cookie",
        f"{_browser_cookie(request)}={browser}; Path=/auth/; HttpOnly; SameSite=Lax; "
        f"Max-Age={int(PENDING_TTL_S)}{secure}",
    )
    response.headers["cache-control"] = "no-store"
    return response


def _param(request: Request, name: str) -> str:
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise _refuse(SSOError(401, f"the provider's answer repeats {name}"))
    value = values[0] if values else ""
    if len(value) > MAX_PARAM:
        raise _refuse(SSOError(401, f"the provider's answer carries an overlong {name}"))
    return value


@router.get("/auth/callback")
def callback(request: Request) -> Response:
    """The provider's answer: on success the same session a password log-in opens, then the page asked for."""
    sso = _sso(request)
    classroom = classroom_of(request)
    answer = {name: _param(request, name) for name in ("state", "code", "error", "iss")}
    try:
        user, next_path = sso.finish(
            answer["state"],
            request.cookies.get(_browser_cookie(request)),
            answer["code"],
            answer["error"],
            answer["iss"],
        )
    except SSOError as exc:
        raise _refuse(exc) from None
    old = getattr(request.state, "session_id", None)
    if old:
        classroom.db.end_session(old)
    session_id, csrf = classroom.db.create_session(user.id, SESSION_LIFETIME_S)
    response = RedirectResponse(next_path, status_code=303)
    for cookie in guard_of(request).session_cookies(request.scope, session_id, csrf):
        response.headers.append("set-cookie", cookie)
    response.headers.append("set-cookie", f"{_browser_cookie(request)}=; Path=/auth/; HttpOnly; Max-Age=0")
    response.headers["cache-control"] = "no-store"
    log.info("provider log-in: %s (%s)", user.username, user.role)
    return response


@router.post("/auth/logout")
def logout(request: Request) -> JSONResponse:
    """End this session on the server; `redirect`: the provider's end-session URL for an account linked to the
    class's provider (it ends the provider's session too, then comes back to /login), else /login."""
    classroom = classroom_of(request)
    session_id = getattr(request.state, "session_id", None)
    user = getattr(request.state, "user", None)
    if session_id:
        classroom.db.end_session(session_id)
    sso = request.app.state.sso
    redirect = (sso.logout_url(user) if sso is not None and user is not None else None) or "/login"
    response = JSONResponse({"logged_out": True, "redirect": redirect})
    for cookie in guard_of(request).clear_cookies(request.scope):
        response.headers.append("set-cookie", cookie)
    response.headers["cache-control"] = "no-store"
    return response
