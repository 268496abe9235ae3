"""The learner's code and progress over JSON: read and save the code (conflicts answered 409 with both
texts), keep a backup, reset to the starter, the next hint, the solution once passed, progress and status.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from tritonlab.i18n import t
from tritonlab.models import HintLocked
from tritonlab.service import ConflictError
from tritonlab.web import lang as weblang
from tritonlab.web.api import (
    MAX_TEXT,
    conflict_response,
    find_exercise,
    jobs_of,
    save,
    save_backup,
    service_of,
)
from tritonlab.web.markdown import highlight_code, render_inline

router = APIRouter(prefix="/api")


class SaveBody(BaseModel):
    text: str = Field(max_length=MAX_TEXT)
    base_version: str | None = Field(default=None, max_length=64)
    force: bool = False


class BackupBody(BaseModel):
    text: str = Field(max_length=MAX_TEXT)


@router.get("/exercises/{exercise_id}/code")
def get_code(exercise_id: str, request: Request) -> dict:
    service = service_of(request)
    exercise = find_exercise(service, exercise_id, weblang.request_lang(request))
    text, version = service.read_code(exercise)
    return {"text": text, "version": version, "path": str(service.learner_file(exercise))}


@router.put("/exercises/{exercise_id}/code", response_model=None)
def put_code(exercise_id: str, body: SaveBody, request: Request) -> dict | JSONResponse:
    service = service_of(request)
    lang = weblang.request_lang(request)
    exercise = find_exercise(service, exercise_id, lang)
    try:
        version = save(service, exercise, body.text, body.base_version, body.force)
    except ConflictError as exc:
        return conflict_response(exc, lang)
    return {"version": version, "saved_at": time.time()}


@router.post("/exercises/{exercise_id}/backup")
def backup(exercise_id: str, body: BackupBody, request: Request) -> dict:
    """Keep a copy of the editor's text in .backups/ (used before the learner loads the disk version)."""
    service = service_of(request)
    exercise = find_exercise(service, exercise_id, weblang.request_lang(request))
    return {"backup": str(save_backup(service, exercise, body.text))}


@router.post("/exercises/{exercise_id}/reset")
def reset(exercise_id: str, request: Request) -> dict:
    service = service_of(request)
    exercise = find_exercise(service, exercise_id, weblang.request_lang(request))
    path = service.reset(exercise)
    text, version = service.read_code(exercise)
    return {"text": text, "version": version, "backup": str(path) if path else None}


@router.post("/exercises/{exercise_id}/hint")
def hint(exercise_id: str, request: Request) -> dict:
    service = service_of(request)
    lang = weblang.request_lang(request)
    exercise = find_exercise(service, exercise_id, lang)
    found = weblang.next_hint(service, exercise, lang)
    total = len(exercise.hint_list(lang))
    if found is None:
        return {"number": None, "total": total, "text": None, "done": True}
    if isinstance(found, HintLocked):  # the hint is not sent until it opens
        return {
            "number": None,
            "total": total,
            "text": None,
            "done": False,
            "locked": {"number": found.number, "needed": found.needed, "failed": found.failed},
        }
    number, total, text = found
    return {
        "number": number,
        "total": total,
        "text": text,
        "html": render_inline(text),
        "done": number >= total,
    }


@router.get("/exercises/{exercise_id}/solution")
def solution(exercise_id: str, request: Request) -> dict:
    service = service_of(request)
    lang = weblang.request_lang(request)
    exercise = find_exercise(service, exercise_id, lang)
    if exercise.id not in service.store.passed_exercises():
        raise HTTPException(403, t("web.error.solution_locked", lang))
    text = exercise.solution.read_text(encoding="utf-8")
    return {"text": text, "html": highlight_code(text, "python")}


@router.get("/progress")
def progress(request: Request) -> dict:
    return weblang.progress(service_of(request), weblang.request_lang(request))


@router.get("/status")
def status(request: Request) -> dict:
    service = service_of(request)
    return {
        "backend": service.backend,
        "reason": service.choice.reason,
        "waiting": service.gate().waiting,
        "active_jobs": jobs_of(request).active,
        "lang": weblang.request_lang(request),
        "warm_children": service.warm_counts(),  # counts only: how the run pool fits the class (load_gpu.py)
    }
