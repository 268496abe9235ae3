"""The FastAPI application: pages, API, static assets, wrapped in the security guard."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from tritonlab.i18n import t
from tritonlab.service import BackupRefused, DiskFull, Service
from tritonlab.web import code_api, pages, profile_api, quiz_api, runs_api, viz_api
from tritonlab.web.jobs import Jobs
from tritonlab.web.lang import request_lang
from tritonlab.web.security import LOOPBACK_HOSTS, BodyTooLarge, Guard

STATIC = Path(__file__).parent / "static"


def static_version() -> str:
    digest = hashlib.sha256()
    for path in sorted(STATIC.rglob("*")):
        if path.is_file():
            digest.update(path.name.encode())
            digest.update(str(path.stat().st_size).encode())
            digest.update(str(int(path.stat().st_mtime)).encode())
    return digest.hexdigest()[:10]


def describe_validation(exc: RequestValidationError, lang: str = "en") -> str:
    """One line for people; pydantic's own descriptions of each problem stay English."""
    problems = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            detail = (err.get("ctx") or {}).get("error", "")
            if detail:
                return t("web.error.invalid_json_detail", lang, detail=detail)
            return t("web.error.invalid_json", lang)
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        problems.append(f"`{where}`: {err.get('msg', 'invalid')}")
    return t("web.error.invalid_request", lang, problems="; ".join(problems))


def create_app(
    service: Service,
    token: str,
    *,
    allowed_hosts: Iterable[str] | None = LOOPBACK_HOSTS,
    classroom: object | None = None,
    public_url: str | None = None,
) -> FastAPI:
    """The web app over `service`. `allowed_hosts=None` accepts any Host header (wildcard binds only).
    With `classroom` (a `tritonlab.classroom.room.Classroom`), accounts replace the token (web/classroom/)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        app.state.jobs.stop_all()
        app.state.jobs.close()  # the spilled run output (web/output_spill.py)

    app = FastAPI(title="tritonlab", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.service = service
    app.state.jobs = Jobs()
    app.state.quiz_attempts = quiz_api.Attempts()
    app.state.static_version = static_version()
    if classroom is not None:
        from tritonlab.web import classroom as classroom_web

        for router in classroom_web.routers:
            app.include_router(router)
    for router in (code_api.router, runs_api.router, viz_api.router, profile_api.router):
        app.include_router(router)
    app.include_router(quiz_api.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")

    def error(request: Request, status: int, message: str) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse(status_code=status, content={"error": message})
        body = pages.templates.get_template("error.html").render(
            status=status,
            message=message,
            lang=request_lang(request),
            nonce=getattr(request.state, "nonce", ""),
            static_version=app.state.static_version,
        )
        return HTMLResponse(body, status_code=status)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = t("web.error.nothing_here", request_lang(request), path=request.url.path)
        response = error(request, exc.status_code, message)
        for name, value in (getattr(exc, "headers", None) or {}).items():  # e.g. Retry-After on a 429
            response.headers[name] = value
        return response

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        return error(request, 422, describe_validation(exc, request_lang(request)))

    @app.exception_handler(DiskFull)
    async def disk_full(request: Request, exc: DiskFull) -> Response:
        return error(request, 507, str(exc.strerror or exc))

    @app.exception_handler(BackupRefused)
    async def backup_refused(request: Request, exc: BackupRefused) -> Response:
        response = error(request, exc.status, str(exc))  # store/code_backups.py: 413 or 429
        if exc.retry_after:
            response.headers["Retry-After"] = str(exc.retry_after)
        return response

    @app.exception_handler(BodyTooLarge)
    async def too_large(request: Request, exc: BodyTooLarge) -> Response:
        return error(request, 413, t("web.error.too_large", request_lang(request)))

    if classroom is not None:
        classroom_web.install(app, classroom, service, allowed_hosts, public_url)  # type: ignore[arg-type]
    else:
        app.add_middleware(Guard, token=token, allowed_hosts=allowed_hosts, lang=service.lang)
    return app
