"""The IPython magics of `%load_ext tritonlab`. Each one shows its result and never raises for a learner's
mistake (a failing verdict, an unknown exercise, a file that does not import): it shows what went wrong.

    %%check EXERCISE [--seed N]   check the cell's code as your file for EXERCISE (in the sandbox)
    %hint EXERCISE                the next hint
    %viz EXERCISE [--solution] [--case NAME] [--seed N]
                                  which program touched which element, for your last checked cell
    %bench EXERCISE               on a GPU: your kernel's speed next to the reference and torch
    %profile EXERCISE [--solution]
                                  on a GPU: each kernel's time under Proton against the measured roofs;
                                  without one, what the compiler tells statically (tritonlab profile)
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from tritonlab.i18n import t
from tritonlab.models import HintLocked
from tritonlab.notebook import render
from tritonlab.notebook.session import get_session


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # no SystemExit inside a notebook
        raise UsageError(f"{self.prog}: {message}")


def parse(prog: str, line: str, *, case: bool = False, solution: bool = False) -> argparse.Namespace:
    parser = _Parser(prog=prog, add_help=False)
    parser.add_argument("exercise")
    parser.add_argument("--seed", type=int, default=None)
    if case:
        parser.add_argument("--case", default=None)
    if solution:
        parser.add_argument("--solution", action="store_true")
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"{prog}: {exc}") from None
    if not words:
        raise UsageError(t("notebook.usage", lang(), prog=prog))
    return parser.parse_args(words)


def lang() -> str:
    return get_session().language


def show_html(markup: str) -> None:
    """Show `markup` with a text/plain version beside it (render.plain: the verdict in words), which is what
    a terminal console, `jupyter nbconvert --to markdown` or a screen reader's text view get, instead of
    `<IPython.core.display.HTML object>`."""
    from IPython.display import display

    display({"text/html": markup, "text/plain": render.plain(markup)}, raw=True)


def show_error(text: str) -> None:
    show_html(render.message(text, "error"))


def show_failure(exc: BaseException) -> None:
    """A learner's mistake (UsageError, KeyError, …) by its message; anything else with its type too."""
    if isinstance(exc, UsageError | KeyError | FileNotFoundError) and exc.args:
        show_error(str(exc.args[0]))
    else:
        show_error(t("notebook.check_failed", lang(), error=f"{type(exc).__name__}: {exc}"))


def check_cell(line: str, cell: str) -> Any:
    try:
        args = parse("%%check", line)
        session = get_session()
        if not cell.strip():
            raise UsageError(t("notebook.empty_cell", session.language, exercise=args.exercise))
        result = session.check(args.exercise, cell, seed=args.seed, offset=1)
        markup = render.verdict_html(
            result.verdict, result.source, lang=session.language, sandbox_note=result.sandbox_note
        )
    except Exception as exc:  # noqa: BLE001 - the environment (sandbox, backend) failing is shown, not raised
        show_failure(exc)
        return None
    show_html(markup)
    return None


def hint_line(line: str) -> None:
    try:
        args = parse("%hint", line)
        session = get_session()
        exercise = session.exercise(args.exercise)
        service = session.service
        found = service.next_hint(exercise)
        hints = service.hints_so_far(exercise) if found is None else []
    except Exception as exc:  # noqa: BLE001
        show_failure(exc)
        return
    if isinstance(found, HintLocked):
        text = t("notebook.hint_locked", session.language, number=found.number, total=found.total,
                 exercise=exercise.id, needed=found.needed, failed=found.failed)  # fmt: skip
        show_html(render.message(text))
    elif found is not None:
        number, total, text = found
        show_html(render.hint_html(exercise.id, number, total, text, lang=session.language))
    elif hints:
        markup = render.hint_html(exercise.id, len(hints), len(hints), hints[-1], True, session.language)
        show_html(markup)
    else:
        show_html(render.message(t("notebook.no_hints", session.language, exercise=exercise.id)))


def viz_line(line: str) -> None:
    try:
        from IPython.display import Image, display

        from tritonlab.viz.run import visualize

        args = parse("%viz", line, case=True, solution=True)
        session = get_session()
        exercise = session.exercise(args.exercise)
        file = None if args.solution else session.last_file.get(exercise.id)
        picture, log = visualize(
            session.service,
            exercise.id,
            file,
            case=args.case,
            solution=args.solution,
            seed=args.seed or 0,
            fmt="png",
        )
    except Exception as exc:  # noqa: BLE001 - VizError and the environment alike are shown, not raised
        show_failure(exc)
        return
    display(Image(data=picture, format="png"))
    s = log.get("summary") or {}
    language = session.language
    if s:
        text = t(
            "notebook.viz_summary",
            language,
            case=s.get("case"),
            programs=s.get("programs", 0),
            masked=s.get("masked_lanes", 0),
            oob=s.get("oob_lanes", 0),
        )
        show_html(render.message(text))
    for key in ("import_error", "process_failure"):
        if key in log:
            show_error(t(f"notebook.viz_{key}", language, message=log[key].get("message")))


def bench_line(line: str) -> None:
    """`%bench EXERCISE`: without a GPU a message; on one the speed table and the roofline (notebook/speed)."""
    from tritonlab.notebook import speed
    from tritonlab.notebook.bench import bench_exercise, gpu_problem

    try:
        args = parse("%bench", line)
        problem = gpu_problem(lang())
        if problem:
            show_html(render.message(problem, "warning"))
            return
        session = get_session()
        data, peaks = bench_exercise(session, args.exercise, None)
        markup = speed.bench_html(args.exercise, data, peaks, session.language)
    except Exception as exc:  # noqa: BLE001 - a bench that cannot run is shown, never raised
        if isinstance(exc, UsageError | KeyError):
            show_failure(exc)
        else:
            show_error(t("notebook.bench.failed", lang(), error=f"{type(exc).__name__}: {exc}"))
        return
    show_html(markup)


def profile_line(line: str) -> None:
    """`%profile EXERCISE [--solution]`: `tritonlab profile` for your last checked cell (else your workspace
    file), shown as escaped text. Without a GPU it is the static view; a profile that cannot run is shown."""
    import html

    from tritonlab.service import profile_report

    try:
        args = parse("%profile", line, solution=True)
        session = get_session()
        exercise = session.exercise(args.exercise)
        file = exercise.solution if args.solution else session.last_file.get(exercise.id)
        data = session.service.profile(exercise, file)
    except Exception as exc:  # noqa: BLE001 - the environment failing is shown, not raised
        show_failure(exc)
        return
    show_html(f'<pre class="tritonlab-profile">{html.escape(profile_report(data))}</pre>')


def register(ipython: Any) -> None:
    """Register the magics on an IPython shell (called by `%load_ext tritonlab`)."""
    ipython.register_magic_function(check_cell, "cell", "check")
    ipython.register_magic_function(hint_line, "line", "hint")
    ipython.register_magic_function(viz_line, "line", "viz")
    ipython.register_magic_function(bench_line, "line", "bench")
    ipython.register_magic_function(profile_line, "line", "profile")
