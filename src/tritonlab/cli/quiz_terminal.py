"""The quiz on a terminal (used by `tritonlab quiz`): render questions and feedback with rich, and run the
interactive loop: one question at a time on stdin, an explanation after each answer, the score at the end.

Each answer is written to the progress store as soon as it is graded, so answers survive EOF or Ctrl-C; the
quiz result (which can mark the lesson's quiz as passed) is written only when every question was answered.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

from tritonlab.content.quiz import letter
from tritonlab.i18n import language_name, t, translate_known

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from tritonlab.content.quiz import Bank, Grade, Presentation, Question, QuizResult, Response
    from tritonlab.models import Lesson
    from tritonlab.service import Store

EXIT_PASSED, EXIT_NOT_PASSED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
_QUIT = {"q", "quit", "exit", "sair", "salir"}


def choice_labels(n: int, lang: str) -> str:
    """quiz.choice_labels in `lang`: "1-4 or a-d", "1-4 ou a-d", "1-4 o a-d"."""
    return t("quiz_error.labels", lang, count=n, last=chr(ord("a") + n - 1)) if n <= 26 else f"1-{n}"


def is_fallback(bank: Bank, lang: str) -> bool:
    """True when the learner reads another language but `bank` is the English one (no quiz.<lang>.toml)."""
    return lang != "en" and not bank.path.name.endswith(f".{lang}.toml")


def input_problem(message: str, lang: str) -> str:
    """A QuizInputError's message (English, from tritonlab.content.quiz) in `lang` when the catalog knows it."""
    return translate_known("quiz_error", message, lang)


def console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


_CODE = re.compile(r"`([^`]*)`")
_EMPHASIS = re.compile(r"(?<![\w*])\*([^\s*][^*]*?[^\s*]|[^\s*])\*(?![\w*])")


def inline(text: str, style: str = "") -> Text:
    """Plain text (never rich markup: prompts contain brackets) with `code` and *emphasis* spans styled."""
    from rich.text import Text

    out = Text(style=style)
    for k, part in enumerate(_CODE.split(text)):
        if k % 2:
            out.append(part, style="bold cyan")
            continue
        for j, piece in enumerate(_EMPHASIS.split(part)):
            out.append(piece, style="italic" if j % 2 else "")
    return out


def _rows(out: Console, rows: list[tuple[Text, Text]]) -> None:
    """Two columns, the second wrapping under itself (a hanging indent)."""
    from rich.table import Table

    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for left, right in rows:
        grid.add_row(left, right)
    out.print(grid)


def print_question(
    out: Console,
    number: int,
    total: int,
    question: Question,
    presentation: Presentation,
    lang: str = "en",
) -> None:
    from rich.syntax import Syntax

    out.print()
    heading = t("quiz.question", lang, number=number, total=total)
    kind = t(f"quiz.type.{question.type}", lang)
    out.rule(f"[bold]{heading}[/]  [dim]{question.id} · {kind}[/]", align="left")
    out.print(inline(question.prompt))
    if question.code:
        out.print(Syntax(question.code.strip("\n"), "python", theme="ansi_dark", background_color="default"))
    from rich.text import Text

    _rows(
        out,
        [(Text(f"  {letter(k)})"), inline(text)) for k, (_, text) in enumerate(presentation.shown(question))],
    )


def _ask_text(question: Question, lang: str = "en") -> str:
    if question.type == "numeric":
        return t("quiz.ask_numeric", lang) + " "
    labels = choice_labels(len(question.options), lang)
    if question.type == "multiple":
        return t("quiz.ask_multiple", lang, labels=labels) + " "
    return t("quiz.ask_single", lang, labels=labels) + " "


def print_feedback(
    out: Console, question: Question, g: Grade, presentation: Presentation, lang: str = "en"
) -> None:
    from rich.text import Text

    if g.correct:
        out.print(Text(t("quiz.right", lang), style="bold green"))
    elif g.score > 0:
        out.print(Text(t("quiz.partly", lang, score=f"{g.score:.0%}"), style="bold yellow"))
    else:
        out.print(Text(t("quiz.wrong", lang), style="bold red"))
    if question.type == "numeric":
        tol = f" (± {question.tolerance:g})" if question.tolerance else ""
        out.print(
            inline(
                t(
                    "quiz.numeric_answer",
                    lang,
                    response=f"{float(g.response):g}",
                    answer=f"{question.answer:g}",
                    tolerance=tol,
                )
            )
        )
    rows = []
    feedback = list(g.feedback)
    if question.type == "multiple":  # in the order the learner saw the options
        feedback.sort(key=lambda f: (f.option is None, presentation.to_position(question, f.option or 0)))
    for f in feedback:
        if f.option is None:
            tag = "  " + t("quiz.why" if question.type == "numeric" else "quiz.note", lang)
            rows.append((Text(tag, style="dim"), inline(f.text, style="italic")))
            continue
        if f.picked and f.right:
            mark, style = t("quiz.pick_right", lang), "green"
        elif f.picked:
            mark, style = t("quiz.pick_wrong", lang), "red"
        else:
            mark = t("quiz.the_answer" if question.type != "multiple" else "quiz.not_picked", lang)
            style = "cyan"
        label = Text(f"  {letter(presentation.to_position(question, f.option))})", style=style)
        body = inline(question.options[f.option], style=style) + Text(f"\n{mark}: ", style=f"bold {style}")
        rows.append((label, body + inline(f.text)))
    _rows(out, rows)


def print_total(
    out: Console, lesson: Lesson, outcome: QuizResult, best: dict | None = None, lang: str = "en"
) -> None:
    from rich.text import Text

    verdict = (
        Text(t("quiz.passed", lang), style="bold green")
        if outcome.passed
        else Text(t("quiz.not_passed", lang), style="bold red")
    )
    out.print()
    score = t(
        "quiz.score",
        lang,
        score=f"{outcome.score:.0%}",
        answered=outcome.answered,
        total=outcome.total,
        pass_mark=f"{outcome.pass_mark:.0%}",
    )
    out.print(Text(score + " ") + verdict)
    if best:
        out.print(
            Text(
                t("quiz.best", lang, id=lesson.id, score=f"{best['score']:.0%}", tries=best["tries"]),
                style="dim",
            )
        )
    if not outcome.passed:
        out.print(Text(t("quiz.retake", lang, number=lesson.number), style="dim"))


def _read(out: Console, question: Question, presentation: Presentation, lang: str = "en") -> Response | str:
    """A parsed response, or "quit" / "eof" / "interrupt". Invalid answers are explained and asked again."""
    from rich.text import Text

    from tritonlab.content.quiz import QuizInputError, parse_response

    while True:
        try:
            text = out.input(_ask_text(question, lang))
        except EOFError:
            return "eof"
        except KeyboardInterrupt:
            return "interrupt"
        if not sys.stdin.isatty():
            out.print(text, markup=False)  # piped answers are not echoed by the terminal; show them
        if text.strip().lower() in _QUIT:
            return "quit"
        try:
            return parse_response(question, text, presentation)
        except QuizInputError as exc:
            out.print(Text(t("quiz.try_again", lang, problem=input_problem(str(exc), lang)), style="yellow"))


def run_interactive(
    lesson: Lesson, bank: Bank, presentation: Presentation, lang: str, key: str, store: Store
) -> int:
    """Ask every question in turn; returns the exit code (0 passed, 1 not passed or stopped, 130 Ctrl-C)."""
    from rich.text import Text

    from tritonlab.content.quiz import format_response, grade, result
    from tritonlab.models import pick

    out = console()
    total = len(bank.questions)
    out.print(Text(t("quiz.title", lang, number=lesson.number, title=pick(lesson.title, lang)), style="bold"))
    if is_fallback(bank, lang):
        out.print(Text(t("quiz.fallback", lang, language=language_name(lang, lang)), style="yellow"))
    out.print(
        Text(
            t("quiz.intro", lang, count=total, pass_mark=f"{bank.pass_mark:.0%}", seed=presentation.seed),
            style="dim",
        )
    )
    grades: dict[str, Grade] = {}
    stopped = ""
    for number, question in enumerate(bank.questions, 1):
        print_question(out, number, total, question, presentation, lang)
        response = _read(out, question, presentation, lang)
        if isinstance(response, str):
            stopped = response
            break
        g = grade(question, response)
        grades[question.id] = g
        store.record_quiz_answer(lesson.id, question.id, format_response(question, response), g.score)
        print_feedback(out, question, g, presentation, lang)
    outcome = result(bank, grades)
    if stopped:
        out.print()
        out.print(Text(t("quiz.stopped", lang, answered=len(grades), total=total, key=key), style="yellow"))
        return EXIT_INTERRUPTED if stopped == "interrupt" else EXIT_NOT_PASSED
    store.record_quiz_result(lesson.id, outcome.score, outcome.passed)
    print_total(out, lesson, outcome, store.best_quiz().get(lesson.id), lang)
    return EXIT_PASSED if outcome.passed else EXIT_NOT_PASSED
