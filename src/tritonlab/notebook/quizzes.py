"""A lesson's quiz in a notebook without widgets: `quiz(5)` prints the questions, `answer(5, "id", "b")`
grades one answer through `content/quiz` and records it in the progress store (the same one the CLI and the
web page use). Options are shown in the bank's order, lettered from "a"; once every question of the lesson has
an answer in this session, the quiz's score is recorded too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
        raise KeyError(f"no lesson {lesson_key!r}; lessons are 1 to {len(service.course.lessons)}") from None
    path = lesson.quiz_path(service.lang)
    if not path.is_file():
        raise KeyError(f"lesson {lesson.number} has no quiz")
    return lesson, load_bank(path)


def show_quiz(lesson_key: int | str) -> None:
    from tritonlab.content.quiz import letter

    lesson, bank = _bank(lesson_key)
    print(f"Quiz of lesson {lesson.number} — {len(bank.questions)} questions, pass mark {bank.pass_mark:.0%}")
    for number, q in enumerate(bank.questions, 1):
        print(f"\n{number}. [{q.id}] {q.prompt}")
        if q.code:
            print("\n".join("    " + line for line in q.code.splitlines()))
        if q.is_choice:
            for k, option in enumerate(q.options):
                print(f"   {letter(k)}) {option}")
            how = "LETTERS" if q.type == "multiple" else "LETTER"
            more = (
                " (several letters: every right option, separated by commas)" if q.type == "multiple" else ""
            )
            print(f'   answer with: tritonlab.notebook.answer({lesson.number}, "{q.id}", "{how}"){more}')
        else:
            print(f'   answer with: tritonlab.notebook.answer({lesson.number}, "{q.id}", NUMBER)')


def answer_question(lesson_key: int | str, question_id: str, choice: str | int | float) -> bool:
    from tritonlab.content.quiz import QuizInputError, format_response, grade, letter, parse_response, result

    lesson, bank = _bank(lesson_key)
    try:
        question = bank.question(question_id)
    except KeyError:
        print(f"lesson {lesson.number}'s quiz has no question {question_id!r}; it has: {', '.join(bank.ids)}")
        return False
    try:
        response = parse_response(question, str(choice))
    except QuizInputError as exc:
        print(f"{question_id}: {exc}")
        return False
    g = grade(question, response)
    store = get_session().service.store
    store.record_quiz_answer(lesson.id, question.id, format_response(question, g.response), g.score)
    print(("✔ right" if g.correct else "✘ not quite") + f" — {question.id} (score {g.score:.2g})")
    for f in g.feedback:
        if f.option is None:
            print(f"   {f.text}")
        else:
            mark = "you picked" if f.picked else "the answer"
            print(f"   {letter(f.option)}) [{mark}{', right' if f.right else ', wrong'}] {f.text}")
    grades = _GRADES.setdefault(lesson.id, {})
    grades[question.id] = g
    if len(grades) == len(bank.questions):
        outcome = result(bank, grades)
        store.record_quiz_result(lesson.id, outcome.score, outcome.passed)
        print(
            f"\nQuiz of lesson {lesson.number}: {outcome.score:.0%} — "
            + ("passed" if outcome.passed else f"not passed yet (pass mark {outcome.pass_mark:.0%})")
        )
    return g.correct
