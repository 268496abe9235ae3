"""``tritonlab bench`` — time reference kernels on this GPU against torch, torch.compile and cuBLAS.

Registered on the main Typer app by ``tritonlab.cli.app``; importing this module imports neither torch nor triton.
Exit codes: 0 ok, 2 no GPU (or bad usage). ``--file`` (a learner's own kernel) is not offered here: learner
code runs through the sandbox, which the lead wires separately.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tritonlab import config

KERNEL_HELP = (
    "vector_add, copy_2d, transpose, softmax, rms_norm, matmul, matmul_bias_gelu, rms_norm_backward, attention, "
    "fused_linear_ce, attention_backward, matmul_tma, matmul_fp8"
)


def _names() -> tuple[str, ...]:
    from tritonlab.perf.kernels import NAMES

    return NAMES


def _err(message: str) -> None:
    typer.echo(f"error: {message}", err=True)


def run_bench(
    targets: list[str],
    *,
    json_out: bool,
    plot: Path | None,
    sweep: bool,
    force: bool,
    refresh_peaks: bool,
    budget_s: float | None = None,
    runs: int = 1,
) -> int:
    """Benchmark ``targets``; return the process exit code. With ``budget_s``, no case starts after that many
    seconds: the cases left are listed under ``"skipped"`` (a time-boxed run, e.g. in `make gpu-verify`)."""
    import time

    from tritonlab.perf import bench
    from tritonlab.perf import targets as targets_mod

    deadline = None if budget_s is None else time.monotonic() + budget_s

    config.use_trusted_triton_cache()  # the course's own kernels: never the cache learner runs write
    ok, why = bench.gpu_status()
    if not ok and not force:
        _err(bench.REFUSAL.format(why=why))
        return 2
    gpu = ok
    if not gpu:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported below
        if "triton" in sys.modules:
            _err(
                "triton was imported before the interpreter could be selected; set TRITON_INTERPRET=1 yourself"
            )
            return 2
        typer.echo(
            "WARNING: --force-interpreter: kernels run on the CPU interpreter at tiny sizes; the numbers "
            "below measure NumPy, not a GPU.",
            err=True,
        )
    from tritonlab.perf.kernels import cases as C
    from tritonlab.perf.kernels import sweeps
    from tritonlab.perf.peaks import get_peaks

    device = "cuda" if gpu else "cpu"
    peaks = get_peaks(refresh=refresh_peaks) if gpu else None
    result: dict[str, Any] = {"env": bench.environment(), "peaks": peaks, "interpreter": not gpu, "rows": []}
    cases = []
    for name in targets:
        if sweep:
            result.setdefault("sweeps", {})[name] = run_sweep(
                sweeps.sweep_for(name, device, tiny=not gpu), gpu
            )
            continue
        cases += C.cases_for(name, device, tiny=not gpu)
    # Interleaved runs: run 1 of every case, then run 2, ...; each case's median and spread (perf/targets.py).
    timed: list[list[dict[str, Any]]] = []
    for run in range(runs):
        timed.append([])
        for case in cases:
            if deadline is not None and time.monotonic() > deadline:
                label = f"{case.kernel} {case.dtype} {'x'.join(map(str, case.shape))} (run {run + 1})"
                result.setdefault("skipped", []).append(label)
                continue
            began = time.monotonic()
            timed[-1].append(bench.measure_case(case, peaks, gpu=gpu))
            # where a time-boxed run's seconds went: run 1 includes compiling ours and torch.compile's kernels
            result.setdefault("case_seconds", []).append(
                {"case": case.label, "run": run + 1, "seconds": round(time.monotonic() - began, 2)}
            )
    if cases:
        result["rows"] = targets_mod.combine(timed) if runs > 1 else timed[0]
        result["runs"] = runs
        result["targets"] = targets_mod.evaluate(result["rows"], peaks)
    if json_out:
        typer.echo(json.dumps(result, indent=1, default=str))
    else:
        if peaks:
            typer.echo(
                f"{result['env'].get('gpu')}: measured copy {peaks['copy_gbps']:.0f} GB/s, "
                f"bf16 matmul {peaks['matmul_bf16_tflops']:.0f} TFLOP/s"
                f"{' (cached)' if peaks.get('cached') else ''}"
            )
        if result["rows"]:
            typer.echo(bench.format_rows(result["rows"]))
        for t in result.get("targets", []):
            measured = "n/a" if t["measured"] is None else f"{t['measured']:.3g}{t['unit']}"
            spread = f" (runs {t['spread'][0]}–{t['spread'][1]})" if t.get("spread") else ""
            against = ""
            if t.get("fastest"):  # a compute target: name the peer(s) it was judged against
                against = f", the fastest of every peer: {', '.join(sorted(set(t['fastest'].values())))}"
            if t.get("incomplete"):
                against += f"; not judged met: {t['incomplete'][0]}"
            typer.echo(
                f"{'MET  ' if t['met'] else 'SHORT'} {t['id']:32s} {measured:>9s}{spread} "
                f"(target ≥ {t['target']}{t['unit']}{against})"
            )
        if result.get("skipped"):
            typer.echo(f"not timed (time budget of {budget_s:.0f} s spent): {', '.join(result['skipped'])}")
        for name, grid in result.get("sweeps", {}).items():
            typer.echo(format_grid(name, grid))
    if plot is not None:
        for path in write_plots(result, plot):
            typer.echo(f"wrote {path}", err=json_out)
    return 0


def run_sweep(sw: Any, gpu: bool) -> dict[str, Any]:
    """Time every (x, y) launch of a sweep; failed launches (e.g. out of resources) give None."""
    from tritonlab.perf import bench

    args = sw.make()
    values = []
    for y in sw.ys:
        row = []
        for x in sw.xs:
            try:
                t = bench.time_ms(lambda x=x, y=y: sw.run(x, y, args), warmup=10, rep=40, gpu=gpu)
            except Exception:  # noqa: BLE001 - an invalid launch is a blank cell, not a crash
                row.append(None)
                continue
            row.append(
                bench.tflops(sw.nflops, t["ms"])
                if sw.nbytes and sw.kernel.startswith("matmul")
                else bench.gbps(sw.nbytes, t["ms"])
            )
        values.append(row)
    unit = "TFLOP/s" if sw.kernel.startswith("matmul") else "GB/s"
    return {
        "kernel": sw.kernel,
        "x": sw.xs,
        "y": sw.ys,
        "xlabel": sw.xlabel,
        "ylabel": sw.ylabel,
        "values": values,
        "unit": unit,
        "note": sw.note,
    }


def format_grid(name: str, grid: dict[str, Any]) -> str:
    head = f"{name} sweep ({grid['note']}), {grid['unit']}: rows {grid['ylabel']}, columns {grid['xlabel']}"
    lines = [head, " " * 8 + "".join(f"{x:>9}" for x in grid["x"])]
    for y, row in zip(grid["y"], grid["values"], strict=True):
        lines.append(f"{y:>8}" + "".join(f"{'—' if v is None else f'{v:.0f}':>9}" for v in row))
    return "\n".join(lines)


def write_plots(result: dict[str, Any], plot: Path) -> list[Path]:
    """Roofline (+ size sweep) for measured rows, or one heat map per sweep, next to ``plot``."""
    from tritonlab.perf import plots

    written: list[Path] = []
    for name, grid in result.get("sweeps", {}).items():
        path = plot if len(result["sweeps"]) == 1 else plot.with_name(f"{plot.stem}-{name}{plot.suffix}")
        written.append(plots.plot_heatmap(grid, path, title=f"{name}: {grid['note']}", unit=grid["unit"]))
    rows = result["rows"]
    if rows:
        peaks = result["peaks"] or {"copy_gbps": 1.0, "matmul_bf16_tflops": 1.0}
        title = (
            "Roofline (interpreter: meaningless)"
            if result["interpreter"]
            else f"Roofline, {result['env'].get('gpu')}"
        )
        written.append(plots.plot_roofline(rows, peaks, plot, title=title))
        series: dict[str, list[tuple[float, float]]] = {}
        compute = all(r["bound"] == "compute" for r in rows)
        for r in rows:
            for impl, t in r["impls"].items():
                if "ms" in t:
                    series.setdefault(impl, []).append((r["bytes"], t["tflops"] if compute else t["gbps"]))
        written.append(
            plots.plot_sweep(
                series,
                plot.with_name(f"{plot.stem}-sizes{plot.suffix}"),
                xlabel="bytes moved (counted)",
                ylabel="TFLOP/s" if compute else "GB/s",
                title="Achieved rate by problem size",
            )
        )
    return written


def bench_learner_file(exercise_id: str, file: Path | None, *, json_out: bool, force: bool) -> int:
    """Time the learner's kernel for an exercise, in the sandbox, next to the reference kernel and torch."""
    from tritonlab.perf import bench, bench_learner
    from tritonlab.service import Service

    ok, why = bench.gpu_status()
    if not ok and not force:
        _err(bench.REFUSAL.format(why=why))
        return 2
    if file is not None and not file.is_file():
        _err(f"{file} does not exist")
        return 2
    service = Service(backend="gpu" if ok else "interpreter")
    try:
        exercise = service.exercise(exercise_id)
        target = file or service.learner_file(exercise)
        if not ok:
            typer.echo(
                "WARNING: --force-interpreter: tiny sizes on the CPU; the numbers are meaningless.", err=True
            )
        peaks = None
        if ok:
            from tritonlab.perf.peaks import get_peaks

            config.use_trusted_triton_cache()  # the roof is measured here, in this (trusted) process

            peaks = get_peaks()
        typer.echo(f"[tritonlab] timing {target} on the {service.backend} backend …", err=True)
        data = bench_learner.run(service, exercise, target, peaks)
    finally:
        service.close()
    if json_out:
        typer.echo(json.dumps(data, indent=1, default=str))
    else:
        if data.get("import_error"):
            err = data["import_error"]
            _err(f"{err.get('where') or target}: {err['type']}: {err['message']}")
        for problem in data.get("problems", []):
            _err(problem)
        if data.get("rows"):
            typer.echo("'ours x' is how many times faster your kernel is than each of the others.")
            typer.echo(bench.format_rows(data["rows"]))
    return 0 if data.get("rows") and not data.get("problems") and not data.get("import_error") else 1


def register(app: typer.Typer) -> None:
    """Add the ``bench`` command to ``app``."""

    @app.command("bench")
    def bench_command(
        target: Annotated[
            str | None,
            typer.Argument(help=f"Reference kernel ({KERNEL_HELP}) or an exercise id to time YOUR kernel."),
        ] = None,
        file: Annotated[
            Path | None,
            typer.Option(
                "--file", help="With an exercise id: time this file instead of your workspace copy."
            ),
        ] = None,
        reference: Annotated[
            bool,
            typer.Option("--reference", help="Time the course's reference kernel of that name, not yours."),
        ] = False,
        all_kernels: Annotated[bool, typer.Option("--all", help="Benchmark every reference kernel.")] = False,
        json_out: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
        plot: Annotated[
            Path | None,
            typer.Option(
                "--plot", help="Write plots to FILE.png (roofline, size sweep; a heat map with --sweep)."
            ),
        ] = None,
        sweep: Annotated[
            bool,
            typer.Option(
                "--sweep",
                help="Sweep launch parameters (BLOCK_SIZE or tile × "
                "num_warps; num_stages × num_warps for matmul).",
            ),
        ] = False,
        force_interpreter: Annotated[
            bool,
            typer.Option(
                "--force-interpreter", help="Run on the CPU interpreter without a GPU (meaningless numbers)."
            ),
        ] = False,
        refresh_peaks: Annotated[
            bool,
            typer.Option("--refresh-peaks", help="Measure this GPU's copy bandwidth and matmul rate again."),
        ] = False,
        runs: Annotated[
            int,
            typer.Option(
                "--runs", min=1, max=9, help="Time every case this many times, interleaved; report medians."
            ),
        ] = 1,
        budget: Annotated[
            float | None,
            typer.Option(
                "--budget", min=0, help="Start no case after this many seconds; list the rest as skipped."
            ),
        ] = None,
    ) -> None:
        """Time your kernel (an exercise id) or the reference kernels next to torch, torch.compile and cuBLAS.

        Needs a GPU. An exercise id (softmax, matmul, ...) times your workspace copy, or --file, in the sandbox,
        after checking it agrees with the reference kernel; --reference or --all time the course's kernels.

        Protocol: fresh random inputs, triton.testing.do_bench medians (L2 flushed before each call), GB/s and
        TFLOP/s from counted bytes and FLOPs, and % of this GPU's measured copy bandwidth and matmul rate.
        """
        names = _names()
        if target is not None and not reference:
            from tritonlab.perf.bench_learner import EXERCISE_KERNELS

            # An exercise id times YOUR kernel (softmax, transpose and matmul name both: --reference for ours).
            if target in EXERCISE_KERNELS:
                raise typer.Exit(bench_learner_file(target, file, json_out=json_out, force=force_interpreter))
        if file is not None:
            _err("--file goes with an exercise id (e.g. `tritonlab bench softmax --file my_softmax.py`)")
            raise typer.Exit(2)
        if all_kernels:
            targets = list(names)
        elif target is None:
            _err(f"name a reference kernel ({KERNEL_HELP}) or pass --all")
            raise typer.Exit(2)
        elif target not in names:
            from tritonlab.perf.bench_learner import EXERCISE_KERNELS

            _err(
                f"unknown reference kernel or exercise {target!r}; choose a kernel from {KERNEL_HELP}, "
                f"or an exercise from {', '.join(EXERCISE_KERNELS)}"
            )
            raise typer.Exit(2)
        else:
            targets = [target]
        code = run_bench(
            targets,
            json_out=json_out,
            plot=plot,
            sweep=sweep,
            force=force_interpreter,
            refresh_peaks=refresh_peaks,
            budget_s=budget,
            runs=runs,
        )
        raise typer.Exit(code)
