"""Server-rendered pages: the course index, a lesson with its workbench and quiz, figures, the language switch."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from urllib.parse import parse_qsl

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup, escape

from tritonlab import config, i18n
from tritonlab.models import Lesson, pick
from tritonlab.service import INSPECT_TARGETS, Service
from tritonlab.web import lang as weblang
from tritonlab.web.markdown import highlight_code, render_block, render_inline, render_lesson
from tritonlab.web.quiz_api import quiz_view
from tritonlab.web.redirects import same_origin_path

router = APIRouter()
templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
LANGUAGE_NAMES = {"en": "English", "pt": "Português", "es": "Español"}  # each in its own language
FIGURE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\.(png|svg|jpg|jpeg|gif|webp)$")


@pass_context
def _t(ctx: Context, key: str, /, **fmt: object) -> str:
    """`{{ t('web.lesson.toc') }}` in a template: a message in the page's language (escaped as usual)."""
    return i18n.t(key, ctx.get("lang"), **fmt)


@pass_context
def _t_html(ctx: Context, key: str, /, **fmt: object) -> Markup:
    """`{{ t_html('web.workbench.file', path=...) }}`: a message whose catalog text holds a little trusted
    HTML (<code>, <kbd>); the values filled in are escaped."""
    text = i18n.template(key, ctx.get("lang"))
    return Markup(text.format(**{name: escape(value) for name, value in fmt.items()}))


def _t_en(key: str, /, **fmt: object) -> str:
    """`{{ t_en('...') }}`: a message in English, whatever the page's language (fallback notices)."""
    return i18n.t(key, "en", **fmt)


templates.env.globals.update(
    t=_t, t_html=_t_html, t_en=_t_en, language_name=i18n.language_name, inspect_targets=list(INSPECT_TARGETS)
)


@functools.cache
def has_kernel(exercise_id: str) -> bool:
    """Whether the exercise launches a kernel that Visualize can draw (bench-protocol does not)."""
    try:
        from tritonlab.viz.run import candidate_cases

        return bool(candidate_cases(exercise_id))
    except Exception:  # no contract for it: nothing to draw
        return False


@functools.cache
def viz_dims(exercise_id: str) -> tuple[bool, str]:
    """(whether Visualize can draw the exercise, the dimensions of its inputs, e.g. "4") for the page: a kernel
    exercise whose tensors all have more than two dimensions gets no Visualize button, and says why."""
    try:
        from tritonlab.viz.run import drawable, input_dims

        return drawable(exercise_id), "/".join(str(d) for d in sorted(input_dims(exercise_id)))
    except Exception:  # no contract: has_kernel already said there is nothing to draw
        return False, ""


def service_of(request: Request) -> Service:
    # In a classroom (web/classroom/guard.py) the guard put the logged-in learner's own service here.
    return getattr(request.state, "service", None) or request.app.state.service


def base_context(request: Request, service: Service, title: str) -> dict:
    lang = weblang.request_lang(request)
    progress = weblang.progress(service, lang)
    return {
        "request": request,
        "title": title,
        "nonce": request.state.nonce,
        "lang": lang,
        "languages": [(code, LANGUAGE_NAMES[code]) for code in config.LANGUAGES],
        "course_title": pick(service.course.title, lang),
        "progress": progress,
        "backend": service.backend,
        "backend_reason": i18n.translate_known("backend_reason", service.choice.reason, lang),
        "js_strings": {"lang": lang, "strings": i18n.js_strings(lang)},
        "static_version": request.app.state.static_version,
        "lessons_nav": [
            {"id": lesson["id"], "number": lesson["number"], "title": lesson["title"]}
            for lesson in progress["lessons"]
        ],
    }


def find_lesson(service: Service, key: str, lang: str = "en") -> Lesson:
    try:
        return service.lesson(key)
    except KeyError:
        raise HTTPException(404, i18n.t("web.lesson.not_found", lang, key=key)) from None


def continue_target(service: Service, progress: dict, lang: str) -> dict:
    """The lesson last opened, else (once something was done, e.g. from the CLI) the lesson of the first
    exercise not yet passed, else lesson 1: a fresh start begins at the beginning, not at the first exercise
    (lesson 1 may be reading only)."""
    lesson = None
    last = service.store.get_state("last_lesson")
    if last:
        try:
            lesson = service.lesson(last)
        except KeyError:
            lesson = None
    current = progress.get("current_exercise")
    begun = bool(
        progress.get("exercises_passed") or progress.get("attempts") or progress.get("quizzes_passed")
    ) or any(item.get("quiz") for item in progress.get("lessons", ()))
    if lesson is None and current and begun:
        lesson = service.lesson(service.exercise(current).lesson_id)
    lesson = lesson or service.course.lessons[0]
    pending = [e for e in lesson.exercises if e.id not in service.store.passed_exercises()]
    href = f"/lessons/{lesson.id}" + (f"#ex-{pending[0].id}" if pending else "")
    return {
        "href": href,
        "lesson": pick(lesson.title, lang),
        "number": lesson.number,
        "exercise": pick(pending[0].title, lang) if pending else None,
        "visited": bool(last),
    }


@router.get("/", response_class=HTMLResponse)
def index(request: Request) -> Response:
    service = service_of(request)
    lang = weblang.request_lang(request)
    ctx = base_context(request, service, pick(service.course.title, lang))
    progress = ctx["progress"]
    cards = []
    for lesson, info in zip(service.course.lessons, progress["lessons"], strict=True):
        passed = sum(1 for e in info["exercises"] if e["passed"])
        has_quiz = lesson.quiz_path(lang).is_file()
        quiz = info["quiz"]
        done = passed == len(lesson.exercises) and (not has_quiz or bool(quiz and quiz["passed"]))
        started = passed > 0 or bool(quiz) or any(e["attempts"] for e in info["exercises"])
        cards.append(
            {
                "id": lesson.id,
                "number": lesson.number,
                "title": info["title"],
                "summary_html": render_inline(pick(lesson.summary, lang)),
                "exercises": [
                    {
                        "id": e["id"],
                        "passed": e["passed"],
                        "title": pick(service.exercise(e["id"]).title, lang),
                    }
                    for e in info["exercises"]
                ],
                "passed": passed,
                "total": len(lesson.exercises),
                "has_quiz": has_quiz,
                "quiz": quiz,
                "state": "done" if done else ("started" if started else "new"),
            }
        )
    ctx.update(
        {
            "cards": cards,
            "continue": continue_target(service, progress, lang),
            "welcome_html": render_block(pick(service.course.welcome, lang)),
            "quizzes_total": sum(1 for c in cards if c["has_quiz"]),
        }
    )
    return templates.TemplateResponse(request, "index.html", ctx)


@router.get("/lessons/{key}", response_class=HTMLResponse)
def lesson_page(key: str, request: Request) -> Response:
    service = service_of(request)
    lang = weblang.request_lang(request)
    lesson = find_lesson(service, key, lang)
    text, fallback = weblang.lesson_markdown(lesson, lang)
    service.store.set_state("last_lesson", lesson.id)
    rendered = render_lesson(text, figure_base=f"/lessons/{lesson.id}/figures", lang=lang)
    title = pick(lesson.title, lang)
    ctx = base_context(request, service, f"{lesson.number}. {title}")
    passed = service.store.passed_exercises()
    exercises = []
    for exercise in lesson.exercises:
        code, version = service.read_code(exercise)
        hints = weblang.hints_so_far(service, exercise, lang)
        exercises.append(
            {
                "id": exercise.id,
                "title": pick(exercise.title, lang),
                "summary_html": render_inline(pick(exercise.summary, lang)),
                "code": code,
                "version": version,
                "path": str(service.learner_file(exercise)),
                "passed": exercise.id in passed,
                "hints_html": [render_inline(h) for h in hints],
                "hint_total": len(exercise.hint_list(lang)),
                "hints_fallback": lang != "en" and not exercise.hints.get(lang),
                "viz": has_kernel(exercise.id),
                "draw": has_kernel(exercise.id) and viz_dims(exercise.id)[0],
                "dims": viz_dims(exercise.id)[1],
            }
        )
    examples = []
    for i, example in enumerate(lesson.examples):
        source = example.file.read_text(encoding="utf-8", errors="replace")
        examples.append(
            {
                "index": i,
                "name": example.file.name,
                "title": pick(example.title, lang),
                "code_html": highlight_code(source, "python"),
            }
        )
    lessons = service.course.lessons
    at = lessons.index(lesson)
    neighbours = {
        "prev": lessons[at - 1] if at > 0 else None,
        "next": lessons[at + 1] if at + 1 < len(lessons) else None,
    }
    ctx.update(
        {
            "lesson": lesson,
            "lesson_title": title,
            "article_html": rendered.html,
            "toc": rendered.toc,
            "fallback": fallback and lang != "en",
            "lang_name": i18n.language_name(lang, lang),
            "exercises": exercises,
            "examples": examples,
            "quiz": quiz_view(service, lesson, request.app.state.quiz_attempts, lang),
            "prev": {"id": neighbours["prev"].id, "title": pick(neighbours["prev"].title, lang)}
            if neighbours["prev"]
            else None,
            "next": {"id": neighbours["next"].id, "title": pick(neighbours["next"].title, lang)}
            if neighbours["next"]
            else None,
        }
    )
    return templates.TemplateResponse(request, "lesson.html", ctx)


@router.get("/lessons/{key}/figures/{name}")
def figure(key: str, name: str, request: Request) -> Response:
    service = service_of(request)
    lang = weblang.request_lang(request)
    lesson = find_lesson(service, key, lang)
    if not FIGURE_NAME.match(name) or ".." in name:
        raise HTTPException(404, i18n.t("web.lesson.no_figure", lang))
    folder = (lesson.dir / "figures").resolve()
    path = (folder / name).resolve()
    if path.parent != folder or not path.is_file():
        raise HTTPException(404, i18n.t("web.lesson.no_figure", lang))
    headers = {"Cache-Control": "max-age=300"}
    if path.suffix == ".svg":
        headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
    return FileResponse(path, headers=headers)


@router.post("/settings/lang")
async def set_language(request: Request) -> Response:
    """The language switch: remembered in this browser (a cookie), never changed for other browsers."""
    form = dict(parse_qsl((await request.body()).decode("utf-8", "replace")))
    lang = form.get("lang", "")
    if not weblang.valid(lang):
        choices = ", ".join(config.LANGUAGES)
        raise HTTPException(
            400, weblang.tr(request, "web.error.unknown_language", lang=lang, choices=choices)
        )
    target = same_origin_path(form.get("next", "/"))  # never another site (web/redirects.py)
    response = RedirectResponse(target, status_code=303)
    weblang.remember(response, lang)
    return response
