"""`tritonlab` — the course in the terminal. Exit codes: 0 ok/passed, 1 check failed, 2 usage/environment error.

torch and triton are never imported here: learner code runs in sandboxed children (see sandbox.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tritonlab import __version__
from tritonlab.cli.common import (
    State,
    console,
    fail,
    find_exercise,
    lang,
    make_service,
    print_verdict,
    t_known,
    tr,
)
from tritonlab.i18n import language_name

# Help texts (--help) stay in English: Typer renders them at import time, before --lang is parsed, and
# Click's own words ("Usage", "Options") are English anyway. Everything a command prints is translated.

if TYPE_CHECKING:
    pass

app = typer.Typer(
    name="tritonlab",
    help="A practical course in Triton GPU programming: lessons, graded kernel exercises, quizzes, benchmarks.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
dev_app = typer.Typer(help="Commands for course authors.", no_args_is_help=True)
app.add_typer(dev_app, name="dev")
daemon_app = typer.Typer(
    help="The background worker that one-shot `tritonlab check` commands reuse (ends by itself when idle).",
    no_args_is_help=True,
)
app.add_typer(daemon_app, name="daemon")


@app.callback()
def main_options(
    lang: Annotated[str | None, typer.Option("--lang", help="Language: en, pt or es.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show internal tracebacks too.")] = False,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        print(f"tritonlab {__version__}")
        raise typer.Exit(0)
    State.lang, State.verbose = lang, verbose


# ---- course ---------------------------------------------------------------------------------------------


@app.command("list")
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


@app.command()
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


@app.command()
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


# ---- running and checking ---------------------------------------------------------------------------------

BackendOpt = Annotated[str | None, typer.Option("--backend", help="auto, interpreter or gpu.")]
ExecutorOpt = Annotated[
    str | None,
    typer.Option(
        "--executor",
        help="local (this machine, default) or ray (a Ray cluster at RAY_ADDRESS; default: TRITONLAB_EXECUTOR).",
    ),
]


@app.command()
def run(
    file: Annotated[Path, typer.Argument(help="A Python file to run in the sandbox.")],
    backend: BackendOpt = None,
    timeout: Annotated[float, typer.Option(help="Wall-clock limit in seconds.")] = 60.0,
) -> None:
    """Run a program (yours, or a lesson example) in a sandboxed child and show what it prints."""
    if not file.is_file():
        raise fail(tr("cli.missing_file", path=file))
    service = make_service(backend)
    err = sys.stderr
    err.write(tr("cli.run.running", file=file, backend=service.backend) + "\n")
    result, error = service.run_file(
        file, on_output=lambda s: (sys.stdout.write(s), sys.stdout.flush()), timeout=timeout
    )
    service.close()
    code = 0
    if error:
        where = f"{error['where']}: " if error.get("where") else ""
        err.write(f"\n{where}{error['type']}: {error['message']}\n")
        if error.get("source"):
            err.write(f"    {error['source']}\n")
        if State.verbose:
            err.write(error.get("traceback", ""))
        code = 1
    elif result.timed_out:
        err.write("\n" + tr("cli.run.time_limit", seconds=f"{timeout:.0f}") + "\n")
        code = 1
    elif result.output_truncated:
        err.write("\n" + tr("cli.run.output_limit") + "\n")
        code = 1
    elif result.signal:
        err.write("\n" + tr("cli.run.signal", signal=result.signal) + "\n")
        code = 1
    elif result.exit_code:
        code = 1
    err.write(tr("cli.run.done", seconds=f"{result.seconds:.2f}", backend=service.backend) + "\n")
    raise typer.Exit(code)


@app.command()
def check(
    exercise_id: Annotated[str, typer.Argument(metavar="EXERCISE", help="Exercise id, e.g. vector-copy.")],
    file: Annotated[
        Path | None, typer.Option("--file", help="Check this file instead of your workspace copy.")
    ] = None,
    solution: Annotated[bool, typer.Option("--solution", help="Check the reference solution.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    backend: BackendOpt = None,
    seed: Annotated[int | None, typer.Option(help="Replay the cases of an earlier check.")] = None,
    show_output: Annotated[bool, typer.Option("--output", help="Show what your code printed.")] = False,
    executor: ExecutorOpt = None,
    huge: Annotated[
        bool,
        typer.Option("--huge", help="Also run the cases past 2³¹ elements (1-D exercises; GPU only)."),
    ] = False,
) -> None:
    """Grade your kernel on many shapes, dtypes and layouts. Exit 0 when it passes, 1 when not."""
    if file is not None and not solution and not file.is_file():
        raise fail(tr("cli.missing_file", path=file))
    from tritonlab.cli import daemon

    if not huge and daemon.wanted(backend, executor):  # --huge: several GiB, in this command's own worker
        code = _check_through_daemon(exercise_id, file, solution, json_out, backend, seed, show_output)
        if code is not None:
            raise typer.Exit(code)
    from tritonlab.service import ExecutorError

    # A one-off check needs one worker: on a cluster it starts one actor, not one per GPU.
    service = make_service(backend, executor=executor, remote_workers=1)
    exercise = find_exercise(service, exercise_id)
    service.prefetch_cases = False  # this process ends after one check
    if huge and service.backend != "gpu":  # several GiB per tensor: never on the interpreter
        raise fail(tr("cli.huge.needs_gpu", backend=service.backend))
    try:
        service.warm_up()
    except ExecutorError as exc:
        raise fail(str(exc)) from None
    target = exercise.solution if solution else file
    if target is not None and not Path(target).is_file():
        raise fail(tr("cli.missing_file", path=target))
    if not json_out:
        shown = target or service.learner_file(exercise)
        sys.stderr.write(tr("cli.check.checking", file=shown, backend=service.backend) + "\n")

    def queued(position: int) -> None:
        if not json_out:
            sys.stderr.write(f"waiting for a free worker: position {position} in the queue\n")

    try:
        verdict = service.check(
            exercise, file=target, seed=seed, record=not solution, on_wait=queued, huge=huge
        )
    except ExecutorError as exc:
        service.close()
        raise fail(str(exc)) from None
    service.close()
    if json_out:
        print(json.dumps(verdict.to_json()))
    else:
        if show_output and verdict.output:
            console().print(verdict.output, markup=False)
        print_verdict(verdict, exercise.id, service.lang)
    raise typer.Exit(0 if verdict.passed else 1)


def _check_through_daemon(
    exercise_id: str,
    file: Path | None,
    solution: bool,
    json_out: bool,
    backend: str | None,
    seed: int | None,
    show_output: bool,
) -> int | None:
    """The check, run by this user's background check daemon (cli/daemon.py): this process imports neither
    torch, triton nor NumPy. None when no daemon answered (the caller checks in this process instead)."""
    from tritonlab.cli import daemon
    from tritonlab.models import Verdict

    msg = {
        "op": "check",
        "exercise": exercise_id,
        "file": str(file.resolve()) if file is not None and not solution else None,
        "solution": solution,
        "seed": seed,
        "record": not solution,
        "cwd": str(Path.cwd()),
        "backend": backend,
    }

    early: list[Verdict] = []

    def progress(event: dict) -> None:
        if json_out:
            return
        if isinstance(event.get("verdict"), dict):  # the verdict first; its speed line follows (GPU)
            early.append(Verdict.from_json(event["verdict"]))
            output = str(event.get("output") or "")
            if show_output and output:
                console().print(output, markup=False)
            print_verdict(early[0], early[0].exercise, lang())
        elif "checking" in event:
            sys.stderr.write(tr("cli.check.checking", file=event["checking"], backend=event.get("backend")))
            sys.stderr.write("\n")
        elif "queued" in event:
            sys.stderr.write(f"waiting for a free worker: position {event['queued']} in the queue\n")

    try:
        reply = daemon.request(msg, progress)
    except (daemon.Unavailable, OSError, ValueError):
        return None
    error = reply.get("error")
    if error == "no_exercise":
        raise fail(tr("cli.no_exercise", id=exercise_id, known=", ".join(map(str, reply.get("known", [])))))
    if error == "course":
        raise fail(tr("cli.course_problem", detail=reply.get("detail", "")))
    if error == "backend":
        raise fail(t_known("backend_reason", str(reply.get("detail", ""))))
    if error or not isinstance(reply.get("verdict"), dict):
        return None
    data = reply["verdict"]
    if json_out:
        print(json.dumps(data))
    elif early:  # already printed: only the speed line is left
        speed = reply.get("speed_line")
        if speed:
            from rich.markup import escape

            console().print(f"[cyan]{escape(str(speed))}[/]")
    else:
        verdict = Verdict.from_json(data)
        output = str(reply.get("output") or "")
        if show_output and output:
            console().print(output, markup=False)
        print_verdict(verdict, verdict.exercise, lang(), speed_text=reply.get("speed_line"))
    return 0 if data.get("passed") else 1


@app.command()
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


@app.command()
def reset(exercise_id: Annotated[str, typer.Argument(metavar="EXERCISE")]) -> None:
    """Restore the starter file (your current file is backed up first)."""
    service = make_service(backend="interpreter")
    exercise = find_exercise(service, exercise_id)
    backup = service.reset(exercise)
    msg = tr("cli.reset.restored", id=exercise.id)
    if backup:
        msg += " " + tr("cli.reset.backup", path=backup)
    console().print(msg)


@app.command()
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


@app.command()
def watch(backend: BackendOpt = None) -> None:
    """Re-check the current exercise on every save; keys: h hint, n next, l list, r re-check, q quit."""
    from tritonlab.cli.watch import watch_loop

    service = make_service(backend)
    try:
        code = watch_loop(service, console())
    finally:
        service.close()
    raise typer.Exit(code)


@app.command()
def doctor(json_out: Annotated[bool, typer.Option("--json")] = False, backend: BackendOpt = None) -> None:
    """Verify the stack: versions, GPU, chosen backend, sandbox layers, and a sanity kernel."""
    from tritonlab.cli.doctor import print_report, run_doctor

    report = run_doctor(backend)
    if json_out:
        print(json.dumps(report, indent=2))
    else:
        print_report(report, console(), lang())
    raise typer.Exit(0 if report["ok"] else 2)


def _print_daemons(answers: list[dict], json_out: bool, stopping: bool) -> None:
    if json_out:
        print(json.dumps(answers, indent=2))
        return
    if not answers:
        print(tr("cli.daemon.none"))
        return
    for a in answers:
        layer = tr("cli.daemon.hardened") if a.get("hardened") else tr("cli.daemon.basic")
        print(
            tr(
                "cli.daemon.stopping" if stopping else "cli.daemon.line",
                pid=a.get("pid"),
                backend=a.get("backend"),
                layer=layer,
                workspace=a.get("workspace") or "-",
                busy=a.get("checks_in_flight", 0),
                idle=a.get("idle_s", 0),
                limit=int(a.get("ends_after_idle_s") or 0),
            )
        )


@daemon_app.command("status")
def daemon_status(json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List this user's background check workers."""
    from tritonlab.cli import daemon

    _print_daemons(daemon.control("status"), json_out, stopping=False)


@daemon_app.command("stop")
def daemon_stop(json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """End this user's background check workers (each finishes the checks it is running first)."""
    from tritonlab.cli import daemon

    answers = daemon.control("stop")
    _print_daemons(answers, json_out, stopping=True)
    left = daemon.wait_gone([int(a["pid"]) for a in answers], seconds=30.0)
    if left and not json_out:
        print(tr("cli.daemon.still_running", pids=", ".join(map(str, left))))


@dev_app.command("check")
def dev_check(
    json_out: Annotated[bool, typer.Option("--json")] = False,
    only: Annotated[list[str] | None, typer.Option("--only", help="Only these exercise ids.")] = None,
    backend: Annotated[str, typer.Option("--backend", help="interpreter or gpu.")] = "interpreter",
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", min=1, max=8, help="Checks at once (default: 2; on a GPU one per 2 CPU cores, ≤ 8)."
        ),
    ] = None,
) -> None:
    """Verify the whole course: starters fail, solutions pass, hints, quizzes and examples are valid."""
    from tritonlab.cli.devcheck import run_dev_check

    problems = run_dev_check(console(), json_out=json_out, only=only, backend=backend, jobs=jobs)
    raise typer.Exit(1 if problems else 0)


def _register_optional() -> None:
    """Commands that live in their own modules (quiz, bench, serve, viz, notebook, classroom)."""
    import importlib

    # command -> (module, its register function); `notebook` lives beside `serve` (cli/serve.py)
    for module_name, function in {
        "quiz": ("quiz", "register"),
        "bench": ("bench", "register"),
        "serve": ("serve", "register"),
        "viz": ("viz", "register"),
        "notebook": ("serve", "register_notebook"),
        "classroom": ("classroom", "register"),
    }.values():
        try:
            module = importlib.import_module(f"tritonlab.cli.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tritonlab.cli.{module_name}":
                raise
            continue
        getattr(module, function)(app)


_register_optional()


def full_disk(exc: BaseException) -> BaseException | None:
    """The innermost full-disk error (ENOSPC, EDQUOT, SQLite's "database or disk is full") behind `exc`."""
    from tritonlab.service import disk_is_full as is_full

    found, seen = None, set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if is_full(current):
            found = current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return found


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("\n" + tr("cli.interrupted") + "\n")
        sys.exit(130)
    except Exception as exc:  # a full disk is the machine's state, not a bug: say so, no traceback
        cause = full_disk(exc)
        if cause is None:
            raise
        from tritonlab import config

        detail = getattr(cause, "strerror", None) or str(cause)
        filename = getattr(cause, "filename", None)  # the file it could not write, when the error says
        where = Path(filename).parent if isinstance(filename, str) else config.home()
        sys.stderr.write(tr("disk_full.cli", detail=detail, where=where) + "\n")
        sys.exit(1)
