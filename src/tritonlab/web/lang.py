"""The web page's language, per browser: the learner's choice in a cookie, else the server's own language
(`tritonlab --lang`, TRITONLAB_LANG, the system locale: config.language, resolved by the Service).

The Service is shared by every browser, so the web layer never changes `service.lang`; it passes the
request's language explicitly to what depends on it (lesson text, titles, hints, quiz banks, messages).
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import Response

from tritonlab import config, i18n
from tritonlab.models import Exercise, HintLocked, Lesson, pick
from tritonlab.service import Service, take_hint

COOKIE = "tritonlab_lang"
MAX_AGE = 365 * 24 * 3600


def valid(lang: str | None) -> bool:
    return lang in config.LANGUAGES


def request_lang(request: Request) -> str:
    """The language of this request: the browser's remembered choice, else the server's default."""
    choice = request.cookies.get(COOKIE)
    if valid(choice):
        return str(choice)
    service = getattr(request.app.state, "service", None)
    return service.lang if service is not None else i18n.REFERENCE


def remember(response: Response, lang: str) -> None:
    """Remember the browser's choice for a year (HttpOnly: the page's scripts never read it)."""
    response.set_cookie(COOKIE, lang, max_age=MAX_AGE, path="/", samesite="lax", httponly=True)


def tr(request: Request, key: str, /, **fmt: Any) -> str:
    """A message in the request's language."""
    return i18n.t(key, request_lang(request), **fmt)


def classroom_text(request: Request, text: object) -> str:
    """A message the classroom built in English (an AccountError, a refused log-in) in the request's
    language, when the catalog's [classroom_text] knows it; else as it is."""
    return i18n.translate_known("classroom_text", str(text), request_lang(request))


def lesson_markdown(lesson: Lesson, lang: str) -> tuple[str, bool]:
    """(markdown, is_fallback): Service.lesson_markdown for an explicit language."""
    path = lesson.text_path(lang)
    return path.read_text(encoding="utf-8"), not path.name.endswith(f".{lang}.md")


def progress(service: Service, lang: str) -> dict:
    """Service.progress() with the lesson titles in `lang`."""
    data = service.progress()
    titles = {lesson.id: pick(lesson.title, lang) for lesson in service.course.lessons}
    for item in data["lessons"]:
        item["title"] = titles.get(item["id"], item["title"])
    return data


def hints_so_far(service: Service, exercise: Exercise, lang: str) -> list[str]:
    return list(exercise.hint_list(lang)[: service.store.hints_shown(exercise.id)])


def next_hint(service: Service, exercise: Exercise, lang: str) -> tuple[int, int, str] | HintLocked | None:
    """Service.next_hint for an explicit language: (number, total, text), HintLocked while the next hint waits
    for more failed checks, else None when all were shown."""
    return take_hint(service.store, exercise, lang)
