"""The teacher's view of a class (teachers only: the guard refuses `/teacher` and `/api/classroom/` to
learners): the progress matrix page and a learner's code, the progress as JSON and CSV, the roster (add,
reset a password, disable, unlock), and opening or closing the join link.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from markupsafe import Markup
from pydantic import BaseModel, Field

from tritonlab.classroom.room import JOIN_OPEN_MAX_S, JOIN_OPEN_S, AccountError, User
from tritonlab.web import lang as weblang
from tritonlab.web.classroom.login import classroom_of, page, user_of
from tritonlab.web.markdown import highlight_code

router = APIRouter()


class NewUserBody(BaseModel):
    username: str = Field(max_length=64)
    display_name: str = Field(default="", max_length=200)
    role: str = Field(default="learner", max_length=16)


class FlagBody(BaseModel):
    value: bool


class JoinLinkBody(FlagBody):
    hours: float = Field(default=JOIN_OPEN_S / 3600, ge=1 / 60, le=JOIN_OPEN_MAX_S / 3600)


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
    return page(
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
    return page(
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
def set_join(body: JoinLinkBody, request: Request) -> dict:
    """Open the join link for `hours` (default 2; it closes by itself then), or close it now."""
    classroom = classroom_of(request)
    classroom.set_join_open(body.value, body.hours * 3600)
    klass = classroom.the_class() or {}
    return {"join_open": klass.get("join_open", False), "join_open_until": klass.get("join_open_until")}


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
