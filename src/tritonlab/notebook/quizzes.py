"""A lesson's quiz in a notebook without widgets: `quiz(5)` prints the questions, `answer(5, "id", "b")`
grades one answer through `content/quiz` and records it in the progress store (the same one the CLI and the
web page use). Options are shown in the bank's order, lettered from "a"; once every question of the lesson has
an answer in this session, the quiz's score is recorded too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonlab.i18n import t
from tritonlab.notebook.session import get_session

if TYPE_CHECKING:
    from tritonlab.content.quiz import Bank, Grade
    from tritonlab.models import Lesson

_GRADES: dict[str, dict[str, Grade]] = {}  # lesson id -> question id -> this session's last grade


def _bank(lesson_key: int | str) -> tuple[Lesson, Bank]:
    from tritonlab.content.quiz import load_bank

    service = get_session().service
    try:
        lesson = service.lesson(lesson_key)
    except KeyError:
        count = len(service.course.lessons)
        raise KeyError(
            t("notebook.quiz.no_lesson", service.lang, key=repr(lesson_key), count=count)
        ) from None
    path = lesson.quiz_path(service.lang)
    if not path.is_file():
        raise KeyError(t("notebook.quiz.no_quiz", service.lang, number=lesson.number))
    return lesson, load_bank(path)


def show_quiz(lesson_key: int | str) -> None:
    from tritonlab.content.quiz import letter

    lesson, bank = _bank(lesson_key)
    lang = get_session().language
    count = len(bank.questions)
    print(
        t("notebook.quiz.heading", lang, number=lesson.number, count=count, pass_mark=f"{bank.pass_mark:.0%}")
    )
    for number, q in enumerate(bank.questions, 1):
        print(f"\n{number}. [{q.id}] {q.prompt}")
        if q.code:
            print("\n".join("    " + line for line in q.code.splitlines()))
        if q.is_choice:
            for k, option in enumerate(q.options):
                print(f"   {letter(k)}) {option}")
            many = q.type == "multiple"
            how = t("notebook.quiz.letters" if many else "notebook.quiz.letter", lang)
            call = f'tritonlab.notebook.answer({lesson.number}, "{q.id}", "{how}")'
            more = t("notebook.quiz.several", lang) if many else ""
        else:
            call = f'tritonlab.notebook.answer({lesson.number}, "{q.id}", {t("notebook.quiz.number", lang)})'
            more = ""
        print("   " + t("notebook.quiz.answer_with", lang, call=call) + more)


def answer_question(lesson_key: int | str, question_id: str, choice: str | int | float) -> bool:
    from tritonlab.content.quiz import QuizInputError, format_response, grade, letter, parse_response, result
    from tritonlab.i18n import translate_known

    lesson, bank = _bank(lesson_key)
    lang = get_session().language
    try:
        question = bank.question(question_id)
    except KeyError:
        ids = ", ".join(bank.ids)
        print(t("notebook.quiz.no_question", lang, number=lesson.number, question=repr(question_id), ids=ids))
        return False
    try:
        response = parse_response(question, str(choice))
    except QuizInputError as exc:
        print(f"{question_id}: {translate_known('quiz_error', str(exc), lang)}")
        return False
    g = grade(question, response)
    store = get_session().service.store
    store.record_quiz_answer(lesson.id, question.id, format_response(question, g.response), g.score)
    mark = t("notebook.quiz.right" if g.correct else "notebook.quiz.wrong", lang)
    print(t("notebook.quiz.graded", lang, mark=mark, question=question.id, score=f"{g.score:.2g}"))
    for f in g.feedback:
        if f.option is None:
            print(f"   {f.text}")
        else:
            who = t("notebook.quiz.you_picked" if f.picked else "notebook.quiz.the_answer", lang)
            verdict = t("notebook.quiz.is_right" if f.right else "notebook.quiz.is_wrong", lang)
            print(f"   {letter(f.option)}) [{who}, {verdict}] {f.text}")
    grades = _GRADES.setdefault(lesson.id, {})
    grades[question.id] = g
    if len(grades) == len(bank.questions):
        outcome = result(bank, grades)
        store.record_quiz_result(lesson.id, outcome.score, outcome.passed)
        verdict = (
            t("notebook.quiz.passed", lang)
            if outcome.passed
            else t("notebook.quiz.not_passed", lang, pass_mark=f"{outcome.pass_mark:.0%}")
        )
        score = f"{outcome.score:.0%}"
        print("\n" + t("notebook.quiz.result", lang, number=lesson.number, score=score, outcome=verdict))
    return g.correct
