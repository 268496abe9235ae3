"""The teacher's view of a class (teachers only: the guard refuses `/teacher` and `/api/classroom/` to
learners): the class's pictures (web/classroom/pictures.py) and the progress matrix, a picture's cell drilled
down to its learners and their code, a learner's code, the progress as JSON and CSV, the roster (add, reset a
password, disable, unlock), and opening or closing the join link. The pictures' exports: exports.py.
"""

from __future__ import annotations

import re
import time

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup
from pydantic import BaseModel, Field

from tritonlab.classroom import insights as class_insights
from tritonlab.classroom.room import JOIN_OPEN_MAX_S, JOIN_OPEN_S, AccountError, User
from tritonlab.i18n import kind_label
from tritonlab.models import FAILURE_KINDS
from tritonlab.web import lang as weblang
from tritonlab.web.classroom import pictures
from tritonlab.web.classroom.login import classroom_of, page, user_of
from tritonlab.web.markdown import numbered_code
from tritonlab.web.pages import templates

router = APIRouter()
MAX_DRILLDOWN = 60  # learners whose code one drill-down page shows; the rest are counted


@pass_context
def _duration(ctx: Context, seconds: float) -> str:
    return pictures.duration(seconds, ctx.get("lang"))


@pass_context
def _kind(ctx: Context, kind: str) -> str:
    return kind_label(kind, ctx.get("lang"))


templates.env.globals.update(duration=_duration, pct=pictures.pct, num=pictures.num, kind_label=_kind)


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
        raise HTTPException(404, weblang.tr(request, "classroom_ui.errors.no_account", id=user_id)) from None


@router.get("/teacher", response_class=HTMLResponse)
def teacher_page(request: Request) -> Response:
    from tritonlab.web.pages import base_context, service_of

    service = service_of(request)
    classroom = classroom_of(request)
    context = base_context(request, service, weblang.tr(request, "classroom_ui.teacher.title"))
    data = classroom.insights(service.course)
    lang = context["lang"]
    public = getattr(request.state, "classroom_guard", None)
    public = public.public if public is not None else None
    base = public.geturl().rstrip("/") if public is not None else str(request.base_url).rstrip("/")
    return page(
        request,
        "classroom_teacher.html",
        **{k: v for k, v in context.items() if k != "request"},
        klass=classroom.the_class(),
        base_url=base,  # the join link in full: --public-url behind a proxy, else the address asked for
        matrix=classroom.matrix(service.course),
        insights=data,
        pictures={name: draw(data, lang) for name, draw in pictures.PICTURES.items()},
        users=[u.to_json() for u in classroom.users()],
        me=user_of(request),
        when=_when,
        leaderboard_on=classroom.leaderboard_enabled(),
    )


@router.get("/teacher/exercises/{exercise_id}", response_class=HTMLResponse)
def drilldown_page(exercise_id: str, request: Request, kind: str | None = None) -> Response:
    """The learners behind a picture's cell (`kind`: a failure kind, "none", or "*" for every stuck learner;
    without it every learner who checked the exercise), each with their latest failure and their code."""
    from tritonlab.web.pages import base_context, service_of

    service = service_of(request)
    lang = weblang.request_lang(request)
    try:
        exercise = service.exercise(exercise_id)
    except KeyError:
        raise HTTPException(
            404, weblang.tr(request, "classroom_ui.errors.no_exercise", id=exercise_id)
        ) from None
    if kind is not None and kind not in (*FAILURE_KINDS, class_insights.NO_KIND, "*"):
        raise HTTPException(404, weblang.tr(request, "classroom_ui.errors.no_kind", kind=kind[:64]))
    classroom = classroom_of(request)
    ids = class_insights.learners_of(classroom.insights(service.course), exercise.id, kind)
    details = classroom.learner_details(service.course, exercise.id, ids[:MAX_DRILLDOWN])
    for item in details:
        user, failure = item["user"], item["failure"] or {}
        line = re.search(r":(\d+)$", failure.get("where", ""))
        item["line"] = int(line.group(1)) if line else None  # the failure's line, marked in the code
        item["code_html"] = Markup(
            numbered_code(
                item["code"], "python", f"u{user.id}-L", f"{user.username}: {exercise.id}", item["line"]
            )
        )
    if kind in (None, "*"):
        heading = weblang.tr(request, "classroom_ui.drilldown.title", exercise=exercise.id)
    else:
        label = (
            kind_label(kind, lang)
            if kind != class_insights.NO_KIND
            else weblang.tr(request, "classroom_ui.pictures.no_kind")
        )
        heading = weblang.tr(request, "classroom_ui.drilldown.title_kind", exercise=exercise.id, kind=label)
    context = base_context(request, service, heading)
    return page(
        request,
        "classroom_drilldown.html",
        **{k: v for k, v in context.items() if k != "request"},
        heading=heading,
        exercise=exercise.id,
        learners=details,
        more=max(0, len(ids) - MAX_DRILLDOWN),
        when=_when,
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
        raise HTTPException(
            404, weblang.tr(request, "classroom_ui.errors.no_exercise", id=exercise_id)
        ) from None
    text, version = classroom_of(request).learner_code(learner, exercise, service.course)
    context = base_context(request, service, f"{learner.username}: {exercise.id}")
    return page(
        request,
        "classroom_code.html",
        **{k: v for k, v in context.items() if k != "request"},
        learner=learner,
        exercise=exercise.id,
        # Pygments' tokens, escaped by numbered_code; Markup only marks its own <span>s as HTML
        code_html=Markup(numbered_code(text, "python", label=f"{learner.username}: {exercise.id}")),
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
        raise HTTPException(400, weblang.classroom_text(request, exc)) from None
    return {**user.to_json(), "password": password}


@router.post("/api/classroom/users/{user_id}/password")
def reset_password(user_id: int, request: Request) -> dict:
    user = _account(request, user_id)
    return {"username": user.username, "password": classroom_of(request).reset_password(user)}


@router.post("/api/classroom/users/{user_id}/disabled")
def set_disabled(user_id: int, body: FlagBody, request: Request) -> dict:
    user = _account(request, user_id)
    if user.id == user_of(request).id and body.value:
        raise HTTPException(400, weblang.tr(request, "classroom_ui.errors.own_account"))
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
        raise HTTPException(
            404, weblang.tr(request, "classroom_ui.errors.no_exercise", id=exercise_id)
        ) from None
    text, version = classroom_of(request).learner_code(learner, exercise, service.course)
    return {"username": learner.username, "exercise": exercise.id, "text": text, "version": version}
