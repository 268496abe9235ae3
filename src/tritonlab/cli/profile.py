"""`tritonlab profile` — where your kernel's time goes: on a GPU the learner's file runs only in a sandboxed
child (job mode `profile`, profiling/child.py) under Proton (`triton.profiler`), and the parent computes the
achieved bandwidth and FLOP rate against this GPU's measured roofs (profiling/report.py); without a GPU nothing
is timed and it shows what `inspect` tells statically for cuda:90; exit 0 profiled (or the static view), 1 your
file could not be imported or nothing could be timed.

Registered by tritonlab.cli.app. Importing this module imports neither torch nor triton.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

PROFILE_HELP = """Profile your kernel: time per kernel, achieved GB/s or TFLOP/s against this GPU's measured roofs.

On a GPU your function runs on the exercise's benchmark inputs under Proton (triton.profiler) in the
sandbox: each kernel's time and launch count, the achieved bandwidth and FLOP rate, the share of the
measured copy or bf16-matmul roof, and any other metric Proton recorded. Without a GPU it says so and shows
what the compiler tells statically for cuda:90: registers, spills, shared memory, occupancy, and which
Hopper instructions (TMA, wgmma) the kernel uses. Exit 0 either way when your file imports."""


def register(app: typer.Typer) -> None:
    @app.command("profile", help=PROFILE_HELP)
    def profile(
        exercise_id: Annotated[str, typer.Argument(metavar="EXERCISE", help="Exercise id.")],
        file: Annotated[
            Path | None, typer.Option("--file", help="Profile this file, not your workspace copy.")
        ] = None,
        solution: Annotated[bool, typer.Option("--solution", help="Profile the reference solution.")] = False,
        backend: Annotated[str | None, typer.Option("--backend", help="auto, interpreter or gpu.")] = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        raise typer.Exit(_profile(exercise_id, file, solution, backend, json_out))


def _profile(exercise_id: str, file: Path | None, solution: bool, backend: str | None, json_out: bool) -> int:
    from tritonlab.cli.common import fail, find_exercise, make_service
    from tritonlab.service import profile_report

    if file is not None and not file.is_file():
        raise fail(f"{file} does not exist")
    if file is not None and solution:
        raise fail("give --file or --solution, not both")
    service = make_service(backend)
    try:
        exercise = find_exercise(service, exercise_id)
        data = service.profile(exercise, exercise.solution if solution else file)
    finally:
        service.close()
    if json_out:
        print(json.dumps(data, indent=1))
    else:
        typer.echo(profile_report(data))
    static = data.get("static") or {}
    if "import_error" in data or "import_error" in static:
        return 1
    if data.get("gpu") and not any(c.get("ms") for c in data.get("cases", [])):
        return 1
    return 0
