"""The classroom's opt-in speed leaderboard (`serve --classroom` only; store/leaderboard.py says what is
ranked): `GET /api/leaderboard`, `PUT /api/leaderboard/name` (a learner joins under a name they choose, or
leaves), `POST /api/classroom/leaderboard` (a teacher switches it on or off), and the `/leaderboard` page.
Names are the learners' own text: Jinja's autoescape shows them as text, and the JSON carries them as data."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field

from tritonlab.classroom.room import AccountError, Classroom, User
from tritonlab.models import pick
from tritonlab.web import lang as weblang

router = APIRouter()


class NameBody(BaseModel):
    name: str | None = Field(default=None, max_length=200)


class SwitchBody(BaseModel):
    value: bool


def _room(request: Request) -> Classroom:
    return request.app.state.classroom


def _user(request: Request) -> User:
    user = getattr(request.state, "user", None)
    if user is None:
        raise HTTPException(401, weblang.tr(request, "web.guard.login_needed"))
    return user


def _data(request: Request) -> dict:
    room, user = _room(request), _user(request)
    data = room.leaderboard(request.app.state.service.course)
    data["me"] = {"name": room.leaderboard_name(user)}
    return data


@router.get("/api/leaderboard")
def get_board(request: Request) -> dict:
    return _data(request)


@router.put("/api/leaderboard/name")
def set_name(body: NameBody, request: Request) -> dict:
    try:
        name = _room(request).set_leaderboard_name(_user(request), body.name)
    except AccountError as exc:
        raise HTTPException(400, weblang.classroom_text(request, exc)) from None
    return {"name": name}


@router.post("/api/classroom/leaderboard")  # under /api/classroom/: the guard lets only teachers in
def switch(body: SwitchBody, request: Request) -> dict:
    _room(request).set_leaderboard(body.value)
    return {"enabled": body.value}


@router.get("/leaderboard", response_class=HTMLResponse)
def page(request: Request) -> Response:
    from tritonlab.web.pages import base_context, service_of, templates

    service = service_of(request)
    lang = weblang.request_lang(request)
    context = base_context(request, service, weblang.tr(request, "classroom_ui.leaderboard.title"))
    titles = {e.id: e.title for e in service.course.exercises()}
    return templates.TemplateResponse(
        request,
        "classroom_leaderboard.html",
        {
            **context,
            "board": _data(request),
            "titles": {k: pick(v, lang) for k, v in titles.items()},
            "me": _user(request),
        },
    )
