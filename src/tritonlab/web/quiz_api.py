"""The lesson quiz in the browser: an attempt per page view (options shuffled), graded answer by answer.

Each answer is graded by tritonlab.content.quiz, stored with `record_quiz_answer`, and answered with its feedback
and explanations straight away. When every question of the attempt has an answer, the quiz's score is
stored with `record_quiz_result`. An answer cannot be changed once its feedback was shown.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, Field

from tritonlab.content import quiz
from tritonlab.i18n import t, translate_known
from tritonlab.models import Lesson
from tritonlab.service import Service
from tritonlab.web.lang import request_lang
from tritonlab.web.markdown import highlight_code, render_block, render_inline

router = APIRouter(prefix="/api")
MAX_ATTEMPTS = 200  # one learner's attempts kept (each page view of a lesson with a quiz makes one; ~20 KiB)
MAX_ATTEMPTS_ALL = 4096  # all learners' together (a class): about 80 MiB at most


@dataclass
class Attempt:
    id: str
    lesson_id: str
    bank: quiz.Bank
    presentation: quiz.Presentation
    grades: dict[str, quiz.Grade] = field(default_factory=dict)
    recorded: bool = False


class Attempts:
    """Attempts kept in memory in one pool per owner (`owner()`: nobody in particular for a single learner, the
    logged-in learner in a class), newest last. An owner past `per_owner` loses their own oldest attempt;
    past `total` for everyone together, the owner holding the most loses theirs — so a learner who opens
    lesson pages again and again only ever drops their own attempts, never a neighbour's."""

    def __init__(self, per_owner: int = MAX_ATTEMPTS, total: int = MAX_ATTEMPTS_ALL) -> None:
        self.per_owner, self.total = per_owner, total
        self._pools: dict[object, OrderedDict[str, Attempt]] = {}
        self._owner_of: dict[str, object] = {}
        self._lock = threading.Lock()

    def owner(self) -> object:
        """Whose pool a new attempt goes to (web/classroom/ownership.py: the logged-in learner)."""
        return None

    def new(self, lesson: Lesson, lang: str) -> Attempt:
        bank = quiz.load_bank(lesson.quiz_path(lang))
        seed = secrets.randbelow(2**31)
        attempt = Attempt(secrets.token_urlsafe(9), lesson.id, bank, quiz.shuffled(bank, seed))
        owner = self.owner()
        with self._lock:
            pool = self._pools.setdefault(owner, OrderedDict())
            pool[attempt.id] = attempt
            self._owner_of[attempt.id] = owner
            while len(pool) > self.per_owner:
                self._drop_oldest(owner)
            while len(self._owner_of) > self.total:
                self._drop_oldest(max(self._pools, key=lambda o: len(self._pools[o])))
        return attempt

    def _drop_oldest(self, owner: object) -> None:
        pool = self._pools[owner]
        gone, _ = pool.popitem(last=False)
        del self._owner_of[gone]
        if not pool:
            del self._pools[owner]

    def get(self, attempt_id: str) -> Attempt | None:
        with self._lock:
            if attempt_id not in self._owner_of:
                return None
            return self._pools[self._owner_of[attempt_id]].get(attempt_id)

    def owned_by(self, attempt_id: str) -> object:
        """The owner of a kept attempt (None also when it is not kept)."""
        with self._lock:
            return self._owner_of.get(attempt_id)

    def count(self, owner: object = ...) -> int:
        """How many attempts are kept: all of them, or `owner`'s."""
        with self._lock:
            if owner is ...:
                return len(self._owner_of)
            return len(self._pools.get(owner, ()))


def question_view(question: quiz.Question, attempt: Attempt) -> dict:
    options = [{"index": i, "html": render_inline(text)} for i, text in attempt.presentation.shown(question)]
    return {
        "id": question.id,
        "type": question.type,
        "prompt_html": render_inline(question.prompt),
        "code_html": highlight_code(question.code.strip("\n"), "python") if question.code else "",
        "options": options,
    }


def quiz_view(service: Service, lesson: Lesson, attempts: Attempts, lang: str | None = None) -> dict | None:
    """What the lesson page needs to show the quiz in `lang` (default: the server's); None when the lesson
    has none, {"error"} when broken."""
    lang = lang or service.lang
    path = lesson.quiz_path(lang)
    if not path.is_file():
        return None
    try:
        attempt = attempts.new(lesson, lang)
    except quiz.QuizBankError as exc:
        return {"error": str(exc)}
    best = service.store.best_quiz().get(lesson.id)
    return {
        "attempt": attempt.id,
        "pass_mark": attempt.bank.pass_mark,
        "best": best,
        "fallback": not path.name.endswith(f".{lang}.toml"),
        "questions": [question_view(q, attempt) for q in attempt.bank.questions],
    }


class AnswerBody(BaseModel):
    question: str = Field(max_length=200)
    response: int | list[int] | float | str


def to_response(
    question: quiz.Question, raw: int | list[int] | float | str, attempt: Attempt
) -> quiz.Response:
    """The learner's answer as tritonlab.content.quiz reads it. QuizInputError messages are English, like quiz's
    own; `answer` shows them in the page's language (the [quiz_error] templates)."""
    if isinstance(raw, str):
        return quiz.parse_response(question, raw, attempt.presentation)
    if isinstance(raw, list):
        if question.type != "multiple":
            raise quiz.QuizInputError(t("quiz_error.one_choice", "en"))
        return frozenset(raw)
    if question.type == "numeric":
        return float(raw)
    if isinstance(raw, float):
        raise quiz.QuizInputError(t("quiz_error.choice_by_index", "en"))
    return frozenset({raw}) if question.type == "multiple" else raw


@router.post("/quiz/{attempt_id}/answer")
def answer(attempt_id: str, body: AnswerBody, request: Request) -> dict:
    service: Service = getattr(request.state, "service", None) or request.app.state.service
    lang = request_lang(request)
    attempt = request.app.state.quiz_attempts.get(attempt_id)
    if attempt is None:
        raise HTTPException(404, t("web.quiz.attempt_gone", lang))
    try:
        question = attempt.bank.question(body.question)
    except KeyError:
        raise HTTPException(404, t("web.quiz.no_question", lang, id=body.question)) from None
    if question.id in attempt.grades:
        raise HTTPException(409, t("web.quiz.already_answered", lang))
    try:
        grade = quiz.grade(question, to_response(question, body.response, attempt))
    except quiz.QuizInputError as exc:
        raise HTTPException(400, translate_known("quiz_error", str(exc), lang)) from None
    attempt.grades[question.id] = grade
    service.store.record_quiz_answer(
        attempt.lesson_id, question.id, quiz.format_response(question, grade.response), grade.score
    )
    result = quiz.result(attempt.bank, attempt.grades)
    finished = result.answered == result.total
    if finished and not attempt.recorded:
        attempt.recorded = True
        service.store.record_quiz_result(attempt.lesson_id, result.score, result.passed)
    feedback = [
        {"index": f.option, "picked": f.picked, "right": f.right, "html": render_block(f.text)}
        for f in grade.feedback
        if f.option is not None
    ]
    notes = [render_block(f.text) for f in grade.feedback if f.option is None and f.text]
    return {
        "question": question.id,
        "correct": grade.correct,
        "score": grade.score,
        "feedback": feedback,
        "note_html": "".join(notes),
        "keyed": sorted(question.keyed) if question.is_choice else [],
        "answer": question.answer if question.type == "numeric" else None,
        "answered": result.answered,
        "total": result.total,
        "result": (
            {"score": result.score, "passed": result.passed, "pass_mark": result.pass_mark}
            if finished
            else None
        ),
    }
