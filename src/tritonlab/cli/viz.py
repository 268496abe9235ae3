"""`tritonlab viz` — a picture of your own launch: programs, offsets, masks, tiles; or a roofline.

Also `tritonlab inspect` — what the compiler makes of your kernel for a GPU, on any machine (no GPU needed):
the learner's file is imported and compiled only in a sandboxed child (job mode `inspect`,
grading/kernel_inspect.py); exit 0 compiled, 1 your file could not be imported or a kernel did not compile.

And `tritonlab profile` — where your kernel's time goes: on a GPU the learner's file runs only in a sandboxed
child (job mode `profile`, profiling/child.py) under Proton (`triton.profiler`), and the parent computes the
achieved bandwidth and FLOP rate against this GPU's measured roofs (profiling/report.py); without a GPU
nothing is timed and it shows what `inspect` tells statically for cuda:90; exit 0 profiled (or the static
view), 1 your file could not be imported or nothing could be timed.

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
    register_inspect(app)
    register_profile(app)

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
                f"case {s['case']}: {s.get('programs', 0)} programs, {s.get('masked_lanes', 0)} masked lanes, "
                f"{s.get('oob_lanes', 0)} out-of-bounds lanes ({s.get('kind', '?')} picture of "
                f"{s.get('kernel', '?')})"
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


# ---- tritonlab inspect ---------------------------------------------------------------------------------

INSPECT_HELP = """Compile your kernel for a GPU target and show what the compiler made of it — no GPU needed.

Your function runs once on the exercise's first case with every launch intercepted (nothing runs on a
device); each launched kernel is compiled for --target with those argument types and constexprs. Shows the
stages TTIR → TTGIR → LLVM IR → PTX (AMDGCN for hip), registers per thread, spills and shared memory
(`ptxas -v`), the blocked layouts (sizePerThread, threadsPerWarp, warpsPerCTA) and how many programs fit
on one SM at once, and what limits that."""

STAGE_NAMES = {
    "ttir": "Triton IR (TTIR)",
    "ttgir": "Triton GPU IR (TTGIR, with layouts)",
    "llir": "LLVM IR",
    "ptx": "PTX",
    "amdgcn": "AMDGCN assembly",
}


def register_inspect(app: typer.Typer) -> None:
    @app.command("inspect", help=INSPECT_HELP)
    def inspect(
        exercise_id: Annotated[str, typer.Argument(metavar="EXERCISE", help="Exercise id.")],
        file: Annotated[
            Path | None, typer.Option("--file", help="Inspect this file, not your workspace copy.")
        ] = None,
        solution: Annotated[bool, typer.Option("--solution", help="Inspect the reference solution.")] = False,
        target: Annotated[
            str, typer.Option("--target", help="cuda:90 (H100), cuda:80 (A100) or hip:gfx942 (MI300).")
        ] = "cuda:90",
        stage: Annotated[
            str | None,
            typer.Option("--stage", help="Print this stage in full: ttir, ttgir, llir, ptx, amdgcn."),
        ] = None,
        lines: Annotated[int, typer.Option("--lines", help="Lines shown of each stage.")] = 8,
        json_out: Annotated[bool, typer.Option("--json", help="Print JSON (every stage in full).")] = False,
    ) -> None:
        raise typer.Exit(_inspect(exercise_id, file, solution, target, stage, lines, json_out))


def _inspect(
    exercise_id: str,
    file: Path | None,
    solution: bool,
    target: str,
    stage: str | None,
    lines: int,
    json_out: bool,
) -> int:
    from tritonlab.cli.common import fail, find_exercise, make_service
    from tritonlab.service import INSPECT_TARGETS as TARGETS

    if target not in TARGETS:
        raise fail(f"unknown --target {target!r}; use one of {', '.join(TARGETS)}")
    if stage is not None and stage not in STAGE_NAMES:
        raise fail(f"unknown --stage {stage!r}; use one of {', '.join(STAGE_NAMES)}")
    if file is not None and not file.is_file():
        raise fail(f"{file} does not exist")
    service = make_service(backend="interpreter")
    try:
        exercise = find_exercise(service, exercise_id)
        path = exercise.solution if solution else file
        data = service.inspect(exercise, path, target=target)
    finally:
        service.close()
    if json_out:
        print(json.dumps(data, indent=1))
    else:
        typer.echo(format_report(data, stage, lines))
    bad = "import_error" in data or not data.get("kernels") or any("error" in k for k in data["kernels"])
    return 1 if bad else 0


def format_report(data: dict, stage: str | None = None, lines: int = 8) -> str:
    """The inspect result as plain text (also used by the web page)."""
    out: list[str] = [
        f"target {data.get('target')}" + (f", case: {data['case']}" if data.get("case") else "")
    ]
    if "import_error" in data:
        err = data["import_error"]
        out.append(f"your file could not be imported: {err.get('type')}: {err.get('message')}")
    for problem in data.get("problems", []):
        out.append(f"note: {problem}")
    for k in data.get("kernels", []):
        out.append("")
        out.append(f"== kernel {k['kernel']} ==")
        if "error" in k:
            out.append(f"did not compile: {k['error']}" + (f" ({k['where']})" if k.get("where") else ""))
            continue
        sig = ", ".join(f"{n}: {t}" for n, t in k.get("signature", {}).items() if t != "constexpr")
        out.append(f"arguments: {sig}")
        if k.get("constexprs"):
            out.append("constexprs: " + ", ".join(f"{n}={v}" for n, v in k["constexprs"].items()))
        r = k.get("resources", {})
        regs = r.get("registers")
        out.append(
            f"registers per thread: {regs if regs is not None else '?'}; "
            f"spills: {r.get('spill_stores', 0)} B stored, {r.get('spill_loads', 0)} B loaded; "
            f"shared memory: {r.get('shared_memory', 0)} B; num_warps={k.get('num_warps')}"
        )
        for lay in k.get("layout", {}).get("blocked", []):
            out.append(
                f"layout {lay['name']}: sizePerThread={lay.get('sizePerThread')} "
                f"threadsPerWarp={lay.get('threadsPerWarp')} warpsPerCTA={lay.get('warpsPerCTA')} "
                f"order={lay.get('order')}"
            )
        from tritonlab.service import INSPECT_FEATURES as FEATURE_LABELS

        feats = {n: v for n, v in k.get("features", {}).items() if v}
        if k.get("features"):
            out.append(
                "instructions: "
                + (
                    ", ".join(f"{FEATURE_LABELS.get(n, n)} ×{v}" for n, v in feats.items())
                    or "none of " + ", ".join(FEATURE_LABELS.values())
                )
            )
        occ = k.get("occupancy")
        if occ:
            limits = ", ".join(f"{n} {v}" for n, v in occ["limits"].items())
            out.append(
                f"occupancy: {occ['programs_per_sm']} programs per SM = {occ['warps_per_sm']} of "
                f"{occ['max_warps_per_sm']} warps ({occ['occupancy']:.0%}); limited by "
                f"{' and '.join(occ['limited_by'])} (limits: {limits})"
            )
        stages = k.get("stages", {})
        out.append("stages: " + " → ".join(stages))
        for name, text in stages.items():
            if stage is not None and name != stage:
                continue
            body = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#loc")]
            shown = body if stage == name else body[:lines]
            more = (
                "" if stage == name else f" (first {len(shown)} of {len(body)} lines; --stage {name} for all)"
            )
            out.append(f"\n--- {STAGE_NAMES.get(name, name)}{more} ---")
            out.extend(shown)
    return "\n".join(out)


# ---- tritonlab profile ---------------------------------------------------------------------------------

PROFILE_HELP = """Profile your kernel: time per kernel, achieved GB/s or TFLOP/s against this GPU's measured roofs.

On a GPU your function runs on the exercise's benchmark inputs under Proton (triton.profiler) in the
sandbox: each kernel's time and launch count, the achieved bandwidth and FLOP rate, the share of the
measured copy or bf16-matmul roof, and any other metric Proton recorded. Without a GPU it says so and shows
what the compiler tells statically for cuda:90: registers, spills, shared memory, occupancy, and which
Hopper instructions (TMA, wgmma) the kernel uses. Exit 0 either way when your file imports."""


def register_profile(app: typer.Typer) -> None:
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
