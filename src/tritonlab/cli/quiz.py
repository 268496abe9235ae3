"""`tritonlab quiz LESSON`: interactive quiz, JSON listing, and non-interactive grading.

Exit codes: 0 passed (or listed), 1 not passed or stopped early, 2 bad input (unknown lesson or question,
malformed or out-of-range answer, broken bank), 130 interrupted with Ctrl-C.

Option order is shuffled per attempt. Interactive attempts use a fresh seed unless --seed is given; --json and
--answer default to seed 0, so a listing and a grading run without --seed agree on the numbering.
"""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from tritonlab.cli.quiz_terminal import EXIT_NOT_PASSED, EXIT_PASSED, EXIT_USAGE
from tritonlab.i18n import t

if TYPE_CHECKING:
    from tritonlab.content.quiz import Bank, Presentation, Question, Response
    from tritonlab.models import Lesson
    from tritonlab.service import Store


def register(app: typer.Typer) -> None:
    app.command("quiz")(quiz_command)


def _global_lang() -> str | None:
    """`tritonlab --lang pt quiz 5`: the CLI keeps its global --lang on cli.common.State."""
    from tritonlab.cli.common import State

    return State.lang


def _lang() -> str:
    from tritonlab import config

    return config.language(_global_lang())


def _fail(message: str, lang: str | None = None) -> NoReturn:
    from rich.console import Console
    from rich.text import Text

    prefix = t("cli.error", lang or _lang()) + " "
    Console(stderr=True, soft_wrap=True).print(Text(prefix, style="bold red") + Text(message))
    raise typer.Exit(EXIT_USAGE)


def _load(lesson_key: str, lang: str) -> tuple[Lesson, Bank]:
    from tritonlab.content.course import CourseError, load_course
    from tritonlab.content.quiz import QuizBankError, load_bank

    try:
        course = load_course()
    except CourseError as exc:
        _fail(t("quiz.load_failed", lang, detail=exc), lang)
    try:
        lesson = course.lesson(lesson_key)
    except KeyError:
        ids = ", ".join(lesson.id for lesson in course.lessons)
        _fail(t("quiz.unknown_lesson", lang, key=lesson_key, count=len(course.lessons), ids=ids), lang)
    path = lesson.quiz_path(lang)
    if not path.is_file():
        _fail(t("quiz.no_quiz", lang, id=lesson.id, path=path), lang)
    try:
        return lesson, load_bank(path)
    except QuizBankError as exc:
        count = len(exc.problems) - 1
        more = t("quiz.invalid_bank_more", lang, count=count) if count else ""
        _fail(t("quiz.invalid_bank", lang, problem=exc.problems[0], more=more), lang)


def quiz_command(
    lesson: Annotated[
        str,
        typer.Argument(metavar="LESSON", help="Lesson number (5) or id (05-vector-add).", show_default=False),
    ],
    answer: Annotated[
        list[str] | None,
        typer.Option(
            "--answer",
            "-a",
            metavar="QID=CHOICE",
            help="Grade without asking: QID=CHOICE, e.g. launch-grid=2 or masks=a,c or programs=97. Repeatable.",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print JSON: the questions (no answers), or the grading with --answer."),
    ] = False,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="Seed for the option order (default: fresh when interactive, else 0)."),
    ] = None,
    lang: Annotated[
        str | None, typer.Option("--lang", help="Language: en, pt or es.", show_default=False)
    ] = None,
) -> None:
    """Take a lesson's quiz: one question at a time, with an explanation after each answer."""
    from tritonlab import config
    from tritonlab.content.quiz import shuffled

    language = config.language(lang or _global_lang())
    the_lesson, bank = _load(lesson, language)
    if answer:
        presentation = shuffled(bank, 0 if seed is None else seed)
        responses = _parse_answers(answer, bank, presentation, lesson, language)
        raise typer.Exit(_grade_all(the_lesson, bank, presentation, responses, as_json, language))
    if as_json:
        presentation = shuffled(bank, 0 if seed is None else seed)
        _print_listing(the_lesson, bank, presentation, language)
        raise typer.Exit(EXIT_PASSED)
    presentation = shuffled(bank, secrets.randbelow(1_000_000) if seed is None else seed)
    from tritonlab.cli.quiz_terminal import run_interactive

    raise typer.Exit(run_interactive(the_lesson, bank, presentation, language, lesson, open_store(language)))


# ---- non-interactive ---------------------------------------------------------------------------------


def _parse_answers(
    items: list[str], bank: Bank, presentation: Presentation, key: str, lang: str = "en"
) -> dict[str, Response]:
    from tritonlab.cli.quiz_terminal import input_problem
    from tritonlab.content.quiz import QuizInputError, parse_response

    responses: dict[str, Response] = {}
    for item in items:
        qid, sep, choice = item.partition("=")
        qid = qid.strip()
        if not sep or not qid or not choice.strip():
            _fail(t("quiz.malformed", lang, item=item, example=bank.ids[0]), lang)
        try:
            question = bank.question(qid)
        except KeyError:
            _fail(
                t("quiz.unknown_question", lang, item=item, qid=qid, ids=", ".join(bank.ids), key=key), lang
            )
        if qid in responses:
            _fail(t("quiz.answered_twice", lang, item=item, qid=qid), lang)
        try:
            responses[qid] = parse_response(question, choice, presentation)
        except QuizInputError as exc:
            _fail(t("quiz.bad_answer", lang, item=item, problem=input_problem(str(exc), lang), key=key), lang)
    return responses


def _grade_all(
    lesson: Lesson,
    bank: Bank,
    presentation: Presentation,
    responses: dict[str, Response],
    as_json: bool,
    lang: str,
) -> int:
    from tritonlab.content.quiz import format_response, grade, grade_json, result, result_json

    grades = {qid: grade(bank.question(qid), response) for qid, response in responses.items()}
    outcome = result(bank, grades)
    store = open_store(lang)
    for qid, g in grades.items():
        question = bank.question(qid)
        store.record_quiz_answer(lesson.id, qid, format_response(question, g.response), g.score)
    store.record_quiz_result(lesson.id, outcome.score, outcome.passed)
    if as_json:
        data = {
            "lesson": lesson.id,
            "lang": lang,
            "fallback": is_fallback(bank, lang),
            "seed": presentation.seed,
            **result_json(outcome),
        }
        data["questions"] = [grade_json(bank.question(qid), g, presentation) for qid, g in grades.items()]
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        from tritonlab.cli.quiz_terminal import console, print_feedback, print_total

        out = console()
        if is_fallback(bank, lang):
            out.print(fallback_line(lang), style="yellow", markup=False)
        for qid, g in grades.items():
            out.rule(f"[bold]{qid}[/]", align="left")
            print_feedback(out, bank.question(qid), g, presentation, lang)
        print_total(out, lesson, outcome, lang=lang)
    return EXIT_PASSED if outcome.passed else EXIT_NOT_PASSED


def open_store(lang: str | None = None) -> Store:
    from tritonlab.service import open_store as store_at_home

    try:
        return store_at_home()
    except Exception as exc:  # the store names the file and the fix
        _fail(t("quiz.no_store", lang or _lang(), detail=exc), lang)


def is_fallback(bank: Bank, lang: str) -> bool:
    from tritonlab.cli.quiz_terminal import is_fallback as fallback

    return fallback(bank, lang)


def fallback_line(lang: str) -> str:
    from tritonlab.i18n import language_name

    return t("quiz.fallback", lang, language=language_name(lang, lang))


def _print_listing(lesson: Lesson, bank: Bank, presentation: Presentation, lang: str) -> None:
    from tritonlab.content.quiz import question_json
    from tritonlab.models import pick

    data = {
        "lesson": lesson.id,
        "title": pick(lesson.title, lang),
        "lang": lang,
        "fallback": is_fallback(bank, lang),
        "seed": presentation.seed,
        "pass_mark": bank.pass_mark,
        "how_to_answer": t("quiz.how_to_answer", lang),
        "questions": [question_json(q, presentation) for q in bank.questions],
    }
    if data["fallback"]:
        data["notice"] = fallback_line(lang)
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


# ---- for `tritonlab dev check` ------------------------------------------------------------------------


def bank_answer_problems(path: Path, run_code: bool = True, timeout: float = 240) -> list[str]:
    """Everything wrong with a bank: validation problems, numeric answers their answer_code disagrees with,
    and (with run_code) code questions whose program, run on the interpreter, does not print the keyed option."""
    from tritonlab.content.quiz import computed_answer_problems, load_bank, validate_bank

    problems = validate_bank(path)
    if problems:
        return problems
    bank = load_bank(path)
    problems = computed_answer_problems(bank)
    if run_code:
        from concurrent.futures import ThreadPoolExecutor

        codes = [q for q in bank.questions if q.type == "code"]
        with ThreadPoolExecutor(max_workers=4) as pool:
            problems += [p for p in pool.map(lambda q: _code_problem(bank, q, timeout), codes) if p]
    return problems


def _code_problem(bank: Bank, question: Question, timeout: float) -> str:
    import os
    import subprocess
    import tempfile

    where = f"{bank.path}: question {question.id!r}, field `code`"
    with tempfile.TemporaryDirectory(prefix="tritonlab-quiz-") as tmp:
        script = Path(tmp) / f"{question.id}.py"
        script.write_text(question.code, encoding="utf-8")  # a file: @triton.jit reads the kernel's source
        env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONWARNINGS": "ignore"}
        try:
            # run as __main__ with Triton 3.6's interpreter index fix (grading/preload.py: its `range()` over a
            # kernel argument fails under NumPy >= 2.4), as every check child runs
            runner = (
                "import runpy, sys; from tritonlab.grading.preload import fix_interpreter_index; "
                "fix_interpreter_index(); runpy.run_path(sys.argv[1], run_name='__main__')"
            )
            done = subprocess.run(
                [sys.executable, "-c", runner, str(script)],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                cwd=tmp,
            )
        except subprocess.TimeoutExpired:
            return f"{where}: did not finish in {timeout:g} s"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"{where}: exited with {done.returncode}: {last}"
    printed = done.stdout.strip()
    if printed != question.options[int(question.answer)]:
        return f"{where}: prints {printed!r} but the keyed option {question.answer} is {question.options[int(question.answer)]!r}"
    return ""
