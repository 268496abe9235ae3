"""What every CLI command shares: global options, messages in the learner's language, errors for people,
making the service, and printing a verdict. Cheap to import: no torch, triton or rich at import time."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tritonlab.i18n import kind_label, t, translate_grader

if TYPE_CHECKING:
    from tritonlab.models import Exercise, Verdict
    from tritonlab.service import Service


BackendOpt = Annotated[str | None, typer.Option("--backend", help="auto, interpreter or gpu.")]
ExecutorOpt = Annotated[
    str | None,
    typer.Option(
        "--executor",
        help="local (this machine, default) or ray (a Ray cluster at RAY_ADDRESS; default: TRITONLAB_EXECUTOR).",
    ),
]


class State:
    lang: str | None = None
    verbose: bool = False


def lang() -> str:
    """The learner's language: --lang, TRITONLAB_LANG, the locale, else English (config.language)."""
    from tritonlab import config

    return config.language(State.lang)


def tr(key: str, /, **fmt: object) -> str:
    """A message of the CLI in the learner's language (src/tritonlab/locales/)."""
    return t(key, lang(), **fmt)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a one-line error for people and return the Exit to raise."""
    from rich.console import Console
    from rich.markup import escape

    # soft_wrap: rich would otherwise break the line at 80 columns when stderr is not a terminal, splitting a
    # long path in two (the terminal, if any, wraps the line itself)
    Console(stderr=True, soft_wrap=True).print(
        f"[bold red]{tr('cli.error')}[/] {escape(message)}", highlight=False
    )
    return typer.Exit(code)


def console():  # noqa: ANN201 - rich is imported lazily
    from rich.console import Console

    return Console(highlight=False)


def make_service(
    backend: str | None = None,
    workspace: Path | None = None,
    executor: str | None = None,
    remote_workers: int | None = None,
) -> Service:
    from tritonlab.content.course import CourseError
    from tritonlab.service import BackendError, ExecutorError, Service

    try:
        service = Service(
            workspace_dir=workspace,
            backend=backend,
            lang=State.lang,
            executor=executor,
            remote_workers=remote_workers,
        )
        _ = service.choice  # resolve the backend now: forcing a missing GPU is a usage error
        service.on_unhardened = lambda message: typer.secho(message, fg="yellow", err=True)
        return service
    except CourseError as exc:
        raise fail(tr("cli.course_problem", detail=exc)) from None
    except BackendError as exc:
        raise fail(t_known("backend_reason", str(exc))) from None
    except ExecutorError as exc:
        raise fail(str(exc)) from None


def t_known(section: str, text: str) -> str:
    """An English message built outside the CLI, in the learner's language when the catalog knows it."""
    from tritonlab.i18n import translate_known

    return translate_known(section, text, lang())


def find_exercise(service: Service, exercise_id: str) -> Exercise:
    try:
        return service.exercise(exercise_id)
    except KeyError:
        known = ", ".join(e.id for e in service.course.exercises())
        raise fail(tr("cli.no_exercise", id=exercise_id, known=known)) from None


def print_verdict(
    verdict: Verdict, exercise_id: str, language: str | None = None, speed_text: str | None = None
) -> None:
    """A check's verdict for people: the grader's messages and causes in `language` where the catalog knows
    them (`i18n.translate_grader`), else in English; the failure kind gets its translated name, the id kept
    beside it. `speed_text`: the speed line already written (by the check daemon), so that this process need
    not import the service to write it."""
    from rich.markup import escape

    lang_ = language or lang()
    out = console()
    n_pass = sum(c.passed for c in verdict.cases)
    header = t(
        "cli.verdict.header",
        lang_,
        id=exercise_id,
        backend=verdict.backend,
        seed=verdict.seed,
        seconds=f"{verdict.duration_s:.2f}",
    )
    if verdict.passed:
        out.print(t("cli.verdict.passed", lang_, header=header, passed=n_pass, total=len(verdict.cases)))
    else:
        out.print(t("cli.verdict.failed", lang_, header=header, passed=n_pass, total=len(verdict.cases)))
        # One entry per distinct problem: the first case in full, then the other cases it also hit.
        groups: dict[tuple[str, str], list] = {}
        for f in verdict.failures:
            # the same advice with other numbers in it (sizes, program counts) is the same problem
            groups.setdefault((f.kind, re.sub(r"\d+(\.\d+)?", "#", f.cause)), []).append(f)
        english_left = False
        for same in list(groups.values())[:6]:
            f = same[0]
            message, message_lang = translate_grader(f.message, lang_)
            english_left = english_left or message_lang != lang_
            where = f" [dim]({escape(f.where)})[/]" if f.where else ""
            out.print(
                f"\n[bold]{escape(f.case)}[/] — [red]{kind_label(f.kind, lang_)}[/]{where}\n  {escape(message)}"
            )
            if f.cause:
                cause, cause_lang = translate_grader(f.cause, lang_)
                english_left = english_left or cause_lang != lang_
                out.print(f"  [yellow]{t('cli.verdict.likely_cause', lang_)}[/] {escape(cause)}")
            if len(same) > 1:
                others = ", ".join(g.case for g in same[1:5]) + (", …" if len(same) > 5 else "")
                out.print(
                    f"  [dim]{escape(t('cli.verdict.same_in', lang_, count=len(same) - 1, cases=others))}[/]"
                )
        if len(groups) > 6:
            out.print("\n" + t("cli.verdict.more", lang_, count=len(groups) - 6))
        out.print("\n" + t("cli.verdict.replay", lang_, seed=verdict.seed, id=exercise_id))
        if lang_ != "en" and english_left:
            out.print(f"[dim]{t('cli.verdict.english_details', lang_)}[/]")
    for note in verdict.notes:
        note = translate_grader(note, lang_)[0]
        out.print(f"[dim]{escape(t('cli.verdict.note', lang_, note=note))}[/]")
    if verdict.speed and not speed_text:
        from tritonlab.service import speed_line

        speed_text = speed_line(verdict.speed)
    if verdict.speed and speed_text:
        out.print(f"[cyan]{escape(speed_text)}[/]")
