"""`tritonlab inspect` — what the compiler makes of your kernel for a GPU, on any machine (no GPU needed).

The learner's file is imported and compiled only in a sandboxed child (job mode `inspect`,
grading/kernel_inspect.py). `format_report` is the plain-text report, shared with the web page's Inspect
(web/viz_api.py). Registered by tritonlab.cli.app; importing this module imports neither torch nor triton.
Exit codes: 0 compiled, 1 your file could not be imported or a kernel did not compile, 2 usage error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

INSPECT_HELP = """Compile your kernel for a GPU target and show what the compiler made of it — no GPU needed.

Your function runs once on one of the exercise's cases (the largest that is still small; the report names
it) with every launch intercepted (nothing runs on a device); each launched kernel is compiled for --target with those argument types and constexprs. Shows the
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


def register(app: typer.Typer) -> None:
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
