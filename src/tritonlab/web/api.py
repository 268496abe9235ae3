"""The JSON API's common ground: what every route under `/api/` does first — find the service that serves
this request (in a classroom, the logged-in learner's own), find the exercise by id, save the text a request
sent (a 409 with both texts on a conflict) — and the request bodies that carry a learner's text.

The routes, one module per concern, each calling the same Service the CLI uses:
`code_api` (the learner's code, hints, solution, progress), `runs_api` (runs and checks, streamed as
server-sent events), `viz_api` (Visualize and Inspect), `quiz_api` (lesson quizzes); in a classroom also
`classroom/`. Errors are JSON objects {"error": "..."} with a 4xx status.
"""

from __future__ import annotations

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from tritonlab.i18n import t
from tritonlab.models import Exercise
from tritonlab.service import MAX_SOURCE_BYTES, BackupRefused, ConflictError, Service, WorkspaceError
from tritonlab.web.jobs import Jobs

MAX_TEXT = MAX_SOURCE_BYTES * 2  # characters; the byte limit itself is enforced by the workspace


class RunBody(BaseModel):
    """A text to save before the run (the editor's), and the version it was based on."""

    text: str | None = Field(default=None, max_length=MAX_TEXT)
    base_version: str | None = Field(default=None, max_length=64)


def service_of(request: Request) -> Service:
    # In a classroom (web/classroom/guard.py) the guard put the logged-in learner's own service here.
    return getattr(request.state, "service", None) or request.app.state.service


def jobs_of(request: Request) -> Jobs:
    return request.app.state.jobs


def find_exercise(service: Service, exercise_id: str, lang: str = "en") -> Exercise:
    try:
        return service.exercise(exercise_id)
    except KeyError:
        raise HTTPException(404, t("web.error.no_exercise", lang, id=exercise_id)) from None


def conflict_response(exc: ConflictError, lang: str = "en") -> JSONResponse:
    return JSONResponse(
        status_code=409,
        content={
            "error": t("web.error.conflict", lang),
            "conflict": True,
            "disk_text": exc.disk_text,
            "disk_version": exc.disk_version,
        },
    )


def save(service: Service, exercise: Exercise, text: str, base: str | None, force: bool = False) -> str:
    try:
        return service.save_code(exercise, text, base, force=force)
    except (ConflictError, BackupRefused):  # BackupRefused: web/app.py answers its status
        raise
    except WorkspaceError as exc:
        status = 413 if "larger than" in str(exc) else 400
        raise HTTPException(status, str(exc)) from None


def save_backup(service: Service, exercise: Exercise, text: str) -> object:
    """Keep a copy of the editor's text; text the store refuses (a class cannot hold a NUL) is a 400."""
    try:
        return service.workspace.backup(exercise, text, "discarded")
    except BackupRefused:  # too large (413) or too many (429): web/app.py answers its status
        raise
    except WorkspaceError as exc:
        raise HTTPException(400, str(exc)) from None


def save_before_run(
    service: Service, exercise: Exercise, body: RunBody | None, lang: str = "en"
) -> JSONResponse | None:
    if body is not None and body.text is not None:
        try:
            save(service, exercise, body.text, body.base_version)
        except ConflictError as exc:
            return conflict_response(exc, lang)
    return None
