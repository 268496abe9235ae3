"""The course and your place in it, in the terminal: `tritonlab list`, `show`, `init`, `hint`, `reset` and
`progress`. Registered by tritonlab.cli.app (in the order `--help` lists them); imports neither torch nor
triton, and rich only inside a command.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tritonlab.cli.common import console, fail, find_exercise, make_service, tr
from tritonlab.i18n import language_name


def list_cmd(json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List the lessons, their exercises and your progress."""
    service = make_service(backend="interpreter")
    progress = service.progress()
    if json_out:
        print(json.dumps(progress, indent=2))
        return
    from rich.table import Table

    from tritonlab.models import pick

    out = console()
    out.print(f"[bold]{pick(service.course.title, service.lang)}[/]")
    table = Table(show_header=True, header_style="bold")
    table.add_column("#", justify="right")
    table.add_column(tr("cli.list.lesson"))
    table.add_column(tr("cli.list.exercises"))
    table.add_column(tr("cli.list.quiz"))
    for lesson in progress["lessons"]:
        marks = " ".join(
            ("[green]✔[/] " if e["passed"] else "[dim]·[/] ") + e["id"] for e in lesson["exercises"]
        )
        quiz = lesson["quiz"]
        quiz_text = "—" if not quiz else f"{quiz['score']:.0%}" + (" ✔" if quiz["passed"] else "")
        table.add_row(
            str(lesson["number"]), lesson["title"], marks or f"[dim]{tr('cli.list.quiz_only')}[/]", quiz_text
        )
    out.print(table)
    current = progress["current_exercise"]
    out.print(
        tr("cli.list.summary", passed=progress["exercises_passed"], total=progress["exercises_total"])
        + " "
        + (tr("cli.list.next", id=current) if current else tr("cli.list.all_passed"))
    )


def show(
    lesson: Annotated[str, typer.Argument(help="Lesson number (5) or id (05-vector-add).")],
    raw: Annotated[bool, typer.Option("--raw", help="Print the Markdown source.")] = False,
) -> None:
    """Show a lesson in the terminal."""
    service = make_service(backend="interpreter")
    try:
        item = service.lesson(lesson)
    except KeyError:
        raise fail(tr("cli.no_lesson", key=lesson, count=len(service.course.lessons))) from None
    text, fallback = service.lesson_markdown(item)
    if raw:
        print(text)
        return
    from rich.markdown import Markdown

    out = console()
    if fallback and service.lang != "en":
        out.print(f"[yellow]{tr('cli.show.fallback', language=language_name(service.lang, service.lang))}[/]")
    out.print(Markdown(text.replace("](figures/", f"]({item.dir}/figures/")))
    if item.exercises:
        out.print(
            f"\n[bold]{tr('cli.show.exercises')}[/] "
            + ", ".join(f"tritonlab check {e.id}" for e in item.exercises)
        )
    out.print(f"[bold]{tr('cli.show.quiz')}[/] tritonlab quiz {item.number}")


def init(
    directory: Annotated[Path, typer.Argument(help="Where to create your workspace.")] = Path(
        "tritonlab-work"
    ),
) -> None:
    """Create a workspace with the starter files (never overwrites your edits)."""
    service = make_service(backend="interpreter", workspace=directory.resolve())
    created = service.init_workspace()
    out = console()
    out.print(tr("cli.init.workspace", path=directory.resolve(), count=len(created)))
    first = service.course.exercises()[0]
    out.print(tr("cli.init.start", dir=directory, id=first.id))


def hint(
    exercise_id: Annotated[str, typer.Argument(metavar="EXERCISE")],
    json_out: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show the next hint for an exercise (one more each time; a hint may wait for failed checks)."""
    from rich.markup import escape

    from tritonlab.models import HintLocked

    service = make_service(backend="interpreter")
    exercise = find_exercise(service, exercise_id)
    result = service.next_hint(exercise)
    locked = result if isinstance(result, HintLocked) else None
    if json_out:
        data: dict = {"exercise": exercise.id, "hint": None}
        if locked:
            data["locked"] = {"number": locked.number, "needed": locked.needed, "failed": locked.failed}
        elif result is not None:
            data["hint"] = {"number": result[0], "total": result[1], "text": result[2]}
        print(json.dumps(data))
        return
    if locked:
        console().print(
            tr("cli.hint.locked", number=locked.number, total=locked.total, id=exercise.id, needed=locked.needed,
               failed=locked.failed)
        )  # fmt: skip
        return
    if service.lang != "en" and not exercise.hints.get(service.lang):
        note = tr("cli.hint.fallback", language=language_name(service.lang, service.lang))
        console().print(f"[yellow]{escape(note)}[/]")
    if result is None:
        hints = service.hints_so_far(exercise)
        console().print(tr("cli.hint.all_shown", count=len(hints)) + f"\n\n{escape(hints[-1])}")
        return
    number, total, text = result
    console().print(tr("cli.hint.hint", number=number, total=total, id=exercise.id) + f"\n\n{escape(text)}")


def reset(exercise_id: Annotated[str, typer.Argument(metavar="EXERCISE")]) -> None:
    """Restore the starter file (your current file is backed up first)."""
    service = make_service(backend="interpreter")
    exercise = find_exercise(service, exercise_id)
    backup = service.reset(exercise)
    msg = tr("cli.reset.restored", id=exercise.id)
    if backup:
        msg += " " + tr("cli.reset.backup", path=backup)
    console().print(msg)


def progress(json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Your progress: exercises passed, attempts, quiz scores."""
    service = make_service(backend="interpreter")
    data = service.progress()
    if json_out:
        print(json.dumps(data, indent=2))
        return
    out = console()
    out.print(
        tr(
            "cli.progress.summary",
            passed=data["exercises_passed"],
            total=data["exercises_total"],
            attempts=data["attempts"],
            quizzes=data["quizzes_passed"],
            lessons=len(data["lessons"]),
        )
    )
    for lesson in data["lessons"]:
        parts = [
            ("✔ " if e["passed"] else "· ") + tr("cli.progress.attempts", id=e["id"], count=e["attempts"])
            for e in lesson["exercises"]
        ]
        quiz = lesson["quiz"]
        if quiz:
            score = tr("cli.progress.quiz", score=f"{quiz['score']:.0%}")
            parts.append(score + (" ✔" if quiz["passed"] else ""))
        out.print(f"{lesson['number']:>2}. {lesson['title']}: " + ("; ".join(parts) or "—"))
