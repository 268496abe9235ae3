"""`tritonlab viz` — a picture of your own launch: programs, offsets, masks, tiles; or a roofline.

Registered by tritonlab.cli.app. Importing this module imports neither torch, triton nor matplotlib.
Exit codes: 0 picture written, 1 your file could not be run (a picture that says why is still written),
2 usage error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

HELP = """Draw which program touched which element in your kernel's launch (run on the interpreter).

1-D exercises give a programs-over-elements strip (masked lanes hatched, out-of-bounds accesses red); 2-D
exercises a source/destination access map coloured by program; the matmul family the C tiles in launch order
and the parts of A and B that the first programs read.

EXERCISE `roofline` draws a roofline instead: from `tritonlab bench --json` output (--bench), or from plain
numbers (--peak-gbps, --peak-tflops, --flops, --bytes, --ms)."""


def register(app: typer.Typer) -> None:
    @app.command("viz", help=HELP)
    def viz(
        exercise_id: Annotated[str, typer.Argument(metavar="EXERCISE", help="Exercise id, or `roofline`.")],
        out: Annotated[Path, typer.Option("--out", "-o", help="Picture to write: .png or .svg.")] = Path(
            "viz.png"
        ),
        file: Annotated[
            Path | None, typer.Option("--file", help="Draw this file, not your workspace copy.")
        ] = None,
        solution: Annotated[bool, typer.Option("--solution", help="Draw the reference solution.")] = False,
        case: Annotated[str | None, typer.Option("--case", help="Case name (substring) or index.")] = None,
        seed: Annotated[int, typer.Option(help="The seed of a check, to draw one of its cases.")] = 0,
        log: Annotated[
            Path | None, typer.Option("--log", help="Also write the access log (JSON) here.")
        ] = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
        bench: Annotated[
            Path | None, typer.Option("--bench", help="roofline: `tritonlab bench --json` output.")
        ] = None,
        kernel: Annotated[
            str | None, typer.Option("--kernel", help="roofline: the bench kernel to highlight.")
        ] = None,
        peak_gbps: Annotated[float, typer.Option(help="roofline: memory bandwidth, GB/s.")] = 0.0,
        peak_tflops: Annotated[float, typer.Option(help="roofline: compute peak, TFLOP/s.")] = 0.0,
        flops: Annotated[float, typer.Option(help="roofline: your kernel's FLOPs.")] = 0.0,
        nbytes: Annotated[float, typer.Option("--bytes", help="roofline: bytes your kernel moves.")] = 0.0,
        ms: Annotated[float, typer.Option(help="roofline: your kernel's time, ms.")] = 0.0,
    ) -> None:
        from tritonlab.cli.common import fail

        if out.suffix.lower() not in (".png", ".svg"):
            raise fail(f"--out must end in .png or .svg, not {out.name!r}")
        if exercise_id == "roofline":
            _roofline(out, bench, kernel, peak_gbps, peak_tflops, flops, nbytes, ms)
            return
        raise typer.Exit(_exercise(exercise_id, out, file, solution, case, seed, log, json_out))


def _exercise(
    exercise_id: str,
    out: Path,
    file: Path | None,
    solution: bool,
    case: str | None,
    seed: int,
    log_path: Path | None,
    json_out: bool,
) -> int:
    from tritonlab.cli.common import fail, find_exercise, make_service
    from tritonlab.viz.run import VizError, visualize

    if file is not None and not file.is_file():
        raise fail(f"{file} does not exist")
    service = make_service(backend="interpreter")
    exercise = find_exercise(service, exercise_id)
    try:
        _data, log = visualize(service, exercise.id, file, case=case, solution=solution, out=out, seed=seed)
    except VizError as exc:
        raise fail(str(exc)) from None
    finally:
        service.close()
    if log_path is not None:
        log_path.write_text(json.dumps(log))
    s = log.get("summary", {})
    if json_out:
        print(json.dumps({k: v for k, v in log.items() if k not in ("access_log", "output")}))
    else:
        typer.echo(f"wrote {log['picture']}")
        if s:
            typer.echo(
                f"case {s['case']}: {s.get('programs', 0)} programs, {s.get('masked_lanes', 0)} lane accesses "
                f"switched off by masks, {s.get('oob_lanes', 0)} out-of-bounds lane accesses (each load and "
                f"store counts its own lanes; {s.get('kind', '?')} picture of {s.get('kernel', '?')})"
            )
        for key in ("import_error", "process_failure"):
            if key in log:
                typer.echo(f"{key.replace('_', ' ')}: {log[key].get('message')}", err=True)
    return 1 if ("import_error" in log or "summary" not in log) else 0


def _roofline(
    out: Path,
    bench: Path | None,
    kernel: str | None,
    peak_gbps: float,
    peak_tflops: float,
    flops: float,
    nbytes: float,
    ms: float,
) -> None:
    from tritonlab.cli.common import fail
    from tritonlab.viz import roofline

    try:
        if bench is not None:
            path = roofline.from_bench(json.loads(bench.read_text()), out, kernel)
        elif peak_gbps > 0 and peak_tflops > 0:
            path = roofline.roofline(
                out,
                peak_gbps=peak_gbps,
                peak_tflops=peak_tflops,
                flops=flops,
                nbytes=nbytes,
                seconds=ms / 1e3,
            )
        else:
            raise fail(
                "roofline needs --bench FILE, or --peak-gbps and --peak-tflops (plus --flops --bytes --ms)"
            )
    except (OSError, ValueError) as exc:
        raise fail(str(exc)) from None
    typer.echo(f"wrote {path}")
