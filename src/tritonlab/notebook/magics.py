"""The IPython magics of `%load_ext tritonlab`. Each one shows its result and never raises for a learner's
mistake (a failing verdict, an unknown exercise, a file that does not import): it shows what went wrong.

    %%check EXERCISE [--seed N]   check the cell's code as your file for EXERCISE (in the sandbox)
    %hint EXERCISE                the next hint
    %viz EXERCISE [--solution] [--case NAME] [--seed N]
                                  which program touched which element, for your last checked cell
    %bench EXERCISE               on a GPU: your kernel's speed next to the reference and torch
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

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
        raise UsageError(f"usage: {prog} EXERCISE (for example: {prog} vector-add)")
    return parser.parse_args(words)


def show_html(markup: str) -> None:
    from IPython.display import HTML, display

    display(HTML(markup))


def show_error(text: str) -> None:
    show_html(render.message(text, "error"))


def check_cell(line: str, cell: str) -> Any:
    try:
        args = parse("%%check", line)
        session = get_session()
        if not cell.strip():
            raise UsageError(f"the cell under %%check {args.exercise} is empty: write your kernel in it")
        result = session.check(args.exercise, cell, seed=args.seed, offset=1)
    except (UsageError, KeyError) as exc:
        show_error(exc.args[0] if exc.args else str(exc))
        return None
    except Exception as exc:  # noqa: BLE001 - the environment (sandbox, backend) failing is shown, not raised
        show_error(f"the check could not run: {type(exc).__name__}: {exc}")
        return None
    show_html(
        render.verdict_html(
            result.verdict, result.source, lang=session.service.lang, sandbox_note=result.sandbox_note
        )
    )
    return None


def hint_line(line: str) -> None:
    try:
        args = parse("%hint", line)
        session = get_session()
        exercise = session.exercise(args.exercise)
    except (UsageError, KeyError) as exc:
        show_error(exc.args[0] if exc.args else str(exc))
        return
    service = session.service
    found = service.next_hint(exercise)
    if found is None:
        hints = service.hints_so_far(exercise)
        if not hints:
            show_html(render.message(f"{exercise.id} has no hints."))
            return
        show_html(render.hint_html(exercise.id, len(hints), len(hints), hints[-1], all_shown=True))
        return
    number, total, text = found
    show_html(render.hint_html(exercise.id, number, total, text))


def viz_line(line: str) -> None:
    from IPython.display import Image, display

    from tritonlab.viz.run import VizError, visualize

    try:
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
    except (UsageError, KeyError, VizError) as exc:
        show_error(exc.args[0] if exc.args else str(exc))
        return
    display(Image(data=picture, format="png"))
    s = log.get("summary") or {}
    if s:
        show_html(
            render.message(
                f"case {s.get('case')}: {s.get('programs', 0)} programs, {s.get('masked_lanes', 0)} masked "
                f"lanes, {s.get('oob_lanes', 0)} out-of-bounds lanes"
            )
        )
    for key in ("import_error", "process_failure"):
        if key in log:
            show_error(f"{key.replace('_', ' ')}: {log[key].get('message')}")


def bench_line(line: str) -> None:
    from tritonlab.notebook.bench import bench_exercise, gpu_problem

    try:
        args = parse("%bench", line)
        problem = gpu_problem()
        if problem:
            show_html(render.message(problem, "warning"))
            return
        session = get_session()
        data = bench_exercise(session, args.exercise, None)
    except (UsageError, KeyError) as exc:
        show_error(exc.args[0] if exc.args else str(exc))
        return
    show_html(render.bench_html(args.exercise, data))


def register(ipython: Any) -> None:
    """Register the magics on an IPython shell (called by `%load_ext tritonlab`)."""
    ipython.register_magic_function(check_cell, "cell", "check")
    ipython.register_magic_function(hint_line, "line", "hint")
    ipython.register_magic_function(viz_line, "line", "viz")
    ipython.register_magic_function(bench_line, "line", "bench")
