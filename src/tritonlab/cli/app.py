"""`tritonlab` — the course in the terminal: the Typer app and its global options, the order of its commands,
the small commands that hand over to a module of their own (`doctor`, `dev check`, `daemon status|stop`), and
`main` (a full disk said in a sentence, not a traceback). Exit codes: 0 ok/passed, 1 check failed,
2 usage/environment error.

torch and triton are never imported here: learner code runs in sandboxed children (runs/sandbox.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from tritonlab import __version__, config
from tritonlab.cli import check, course
from tritonlab.cli.common import BackendOpt, State, console, lang, tr

# Help texts (--help) stay in English: Typer renders them at import time, before --lang is parsed, and
# Click's own words ("Usage", "Options") are English anyway. Everything a command prints is translated.

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


# The main commands, in the order `tritonlab --help` lists them (their code: cli/course.py, cli/check.py); the
# other commands live in modules of their own that register themselves (_register_optional, below).
app.command("list")(course.list_cmd)
app.command("show")(course.show)
app.command("init")(course.init)
app.command("run")(check.run)
app.command("check")(check.check)
app.command("hint")(course.hint)
app.command("reset")(course.reset)
app.command("progress")(course.progress)
app.command("watch")(check.watch)


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
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only", help="Only these exercise ids (repeat the option, or separate them by commas)."
        ),
    ] = None,
    backend: Annotated[str, typer.Option("--backend", help="interpreter or gpu.")] = "interpreter",
    jobs: Annotated[
        int | None,
        typer.Option(
            # with 16 at once 11 examples failed with ENOSPC when every check shared one learner compile cache
            # (H100-80GB-HBM3 run 2026-12-05 (5725d86)); each exercise now has its own (cli/devcheck.py)
            "--jobs",
            min=1,
            max=16,
            help="Checks at once (default: 2; on a GPU one per 2 CPU cores, ≤ 8; at most 16).",
        ),
    ] = None,
) -> None:
    """Verify the whole course: starters fail, solutions pass, hints, quizzes and examples are valid."""
    from tritonlab.cli.devcheck import run_dev_check

    if only:
        only = [name.strip() for given in only for name in given.split(",") if name.strip()]
    problems = run_dev_check(console(), json_out=json_out, only=only, backend=backend, jobs=jobs)
    raise typer.Exit(1 if problems else 0)


def _register_optional() -> None:
    """Commands that live in their own modules (quiz, bench, serve, inspect, profile, viz, notebook, classroom)."""
    import importlib

    # command -> (module, its register function); `notebook` lives beside `serve` (cli/serve.py)
    for module_name, function in {
        "quiz": ("quiz", "register"),
        "bench": ("bench", "register"),
        "serve": ("serve", "register"),
        "inspect": ("inspect", "register"),
        "profile": ("profile", "register"),
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
    config.quiet_thread_pools()  # before anything loads numpy or torch (config.THREAD_WAIT_DEFAULTS)
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("\n" + tr("cli.interrupted") + "\n")
        sys.exit(130)
    except Exception as exc:  # a full disk is the machine's state, not a bug: say so, no traceback
        cause = full_disk(exc)
        if cause is None:
            raise
        detail = getattr(cause, "strerror", None) or str(cause)
        filename = getattr(cause, "filename", None)  # the file it could not write, when the error says
        where = Path(filename).parent if isinstance(filename, str) else config.home()
        sys.stderr.write(tr("disk_full.cli", detail=detail, where=where) + "\n")
        sys.exit(1)
