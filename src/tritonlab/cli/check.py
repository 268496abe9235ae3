"""Your code in the sandbox, from the terminal: `tritonlab run` (a program, its output streamed), `check`
(the grader's verdict; exit 0 passed, 1 not) and `watch` (re-check on every save).

A one-shot `check` goes through this user's background check daemon (cli/daemon.py), so this process imports
neither torch, triton nor NumPy; it checks in its own process when the daemon is off (TRITONLAB_DAEMON=0) or
does not answer, with `--huge`, and on a cluster (`--executor ray`). Registered by tritonlab.cli.app.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from tritonlab.cli.common import (
    BackendOpt,
    ExecutorOpt,
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


def watch(backend: BackendOpt = None) -> None:
    """Re-check the current exercise on every save; keys: h hint, n next, l list, r re-check, q quit."""
    from tritonlab.cli.watch import watch_loop

    service = make_service(backend)
    try:
        code = watch_loop(service, console())
    finally:
        service.close()
    raise typer.Exit(code)
