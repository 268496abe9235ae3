#!/usr/bin/env python3
"""Pick the launch configurations of the compute-bound reference kernels on a GPU, in one time-boxed call.

    python scripts/tune_reference_kernels.py --out $OUT/tune --budget-s 420
    python scripts/tune_reference_kernels.py --out $OUT/tune --only attention,attention_bwd
    python scripts/tune_reference_kernels.py --list            # the plan (no GPU needed)

Sections (``--only``, comma-separated, run in this order): ``attention`` (forward, issue 38's B·H·S·D table,
causal and full), ``attention_bwd`` (the backward, same shapes), ``gemm`` (the persistent TMA GEMM,
``matmul_tma``), ``fp8`` (the block-scaled fp8 GEMM). Each section times every peer (each SDPA backend on its
own, the default SDPA call with the backend it picked, torch.compile; cuBLAS, torch.compile in default and
max-autotune modes; torch._scaled_mm with block, row and tensor scales) and our candidate variants, the
current default first, then the most promising.

Protocol: before anything is timed, ``--warm-procs`` worker processes compile every variant in parallel (Triton
and Inductor caches on disk). Then, per case: fresh random inputs; each implementation run once and checked
against a float64 reference (a wrong or failing one is recorded with its error and never timed); then
``--repeats`` interleaved rounds of hidden-launch timings (``perf/bench.py``: L2 flushed, a GPU-side spin
before each call, CUDA events, median). The clock is read before every check and timing, the sections share
the budget (attention 40 %, backward 30 %, fp8 18 %, gemm 12 %, what one leaves going to the next); nothing
starts after the deadline. A variant that fails (compile error, wrong result, out of resources) is recorded and
skipped: one failure never ends the run.

Writes, under ``--out``: ``tune.json`` (environment, every measurement: per case and implementation the
per-round milliseconds, median, TFLOP/s, relative error, errors; per group the geometric mean of each variant
against the fastest peer; the recommended configurations), ``tune.md`` (the same as tables, printed last),
``log.txt`` (progress). Both files are rewritten after every case, so a run cut short keeps what it measured.
Refuses to run without a CUDA GPU (``--smoke`` exercises the whole path on the Triton interpreter at tiny
sizes, for the CPU test; its numbers mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tunekit import plan, summary  # noqa: E402

RESERVE_S = 8.0  # kept at the end for the summary and the files


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--out", type=Path, default=Path("tune-out"), help="folder for tune.json, tune.md, log.txt"
    )
    ap.add_argument("--budget-s", type=float, default=420.0, help="hard wall-clock budget in seconds (420)")
    ap.add_argument(
        "--only",
        default=",".join(plan.SECTIONS),
        help=f"comma-separated sections of: {', '.join(plan.SECTIONS)}",
    )
    ap.add_argument("--repeats", type=int, default=3, help="interleaved timing rounds per case (3)")
    ap.add_argument("--rep-ms", type=float, default=25.0, help="milliseconds of repetitions per timing (25)")
    ap.add_argument(
        "--warm-procs", type=int, default=12, help="parallel compile processes before timing (12; 0: none)"
    )
    ap.add_argument("--warm-s", type=float, default=130.0, help="at most this many seconds of warm-up (130)")
    ap.add_argument("--list", action="store_true", help="print the plan (cases, peers, variants) and exit")
    ap.add_argument(
        "--smoke", action="store_true", help="tiny shapes on the Triton interpreter (CPU test only)"
    )
    ap.add_argument("--warm-worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--warm-file", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    bad = [s for s in wanted if s not in plan.SECTIONS]
    if bad or not wanted:
        ap.error(f"--only takes {', '.join(plan.SECTIONS)}; got {args.only!r}")
    args.sections = [s for s in plan.SECTIONS if s in wanted]
    if args.budget_s <= RESERVE_S:
        ap.error(f"--budget-s must be more than {RESERVE_S:.0f} s")
    return args


def build(args: argparse.Namespace, device: str) -> list[plan.Section]:
    sections = [plan.BUILD[name](device, args.smoke) for name in args.sections]
    if args.smoke:  # torch.compile on the CPU builds C++ for minutes: the smoke run checks the plumbing only
        for s in sections:
            s.impls = [i for i in s.impls if not i.name.startswith("torch.compile")]
    return sections


def print_plan(sections: list[plan.Section]) -> None:
    for s in sections:
        print(f"== {s.name}: {s.describe} (budget share {s.share:.0%})")
        print("   cases: " + ", ".join(f"{c.label} [{c.group}]" for c in s.cases))
        for impl in s.impls:
            where = "all groups" if impl.groups is None else ", ".join(sorted(impl.groups))
            default = f"; default of {', '.join(sorted(impl.default_for))}" if impl.default_for else ""
            print(f"   {impl.kind:9s} {impl.name:40s} {where}{default}")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    began = time.monotonic()
    deadline = began + args.budget_s - RESERVE_S
    if args.smoke:
        os.environ["TRITON_INTERPRET"] = "1"
    os.environ.setdefault("TRITON_CACHE_DIR", "/tmp/tritonlab-tune-triton-cache")
    from tritonlab.perf import bench

    gpu, why = bench.gpu_status()
    if args.list:
        print_plan(build(args, "cuda" if gpu else "cpu"))
        return 0
    if not gpu and not args.smoke:
        print(f"tune_reference_kernels.py needs a CUDA GPU: {why}", file=sys.stderr)
        return 2
    device = "cuda" if gpu else "cpu"
    if args.warm_worker:
        from tunekit import warm

        return warm.worker(build(args, device), args.warm_worker, args.warm_file)
    import torch
    from tunekit import measure, warm

    args.out.mkdir(parents=True, exist_ok=True)
    log_file = open(args.out / "log.txt", "w")  # noqa: SIM115 - closed at the end

    def log(msg: str) -> None:
        line = f"[{time.monotonic() - began:6.1f}s] {msg}"
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    torch.manual_seed(20261204)
    result: dict[str, Any] = {
        "env": bench.environment(),
        "args": {k: str(v) for k, v in vars(args).items() if not k.startswith("warm_w")},
        "sections": {},
        "peer_notes": plan.PEER_NOTES,
    }

    def save() -> None:
        result["elapsed_s"] = round(time.monotonic() - began, 1)
        result["summary"] = summary.summarize(result)
        (args.out / "tune.json").write_text(json.dumps(result, indent=1, default=str))
        (args.out / "tune.md").write_text(summary.markdown(result))

    log(f"env: {result['env']}")
    sections = build(args, device)
    warm_errors: dict[tuple[str, str], str] = {}
    warm_ok: set[tuple[str, str]] = set()
    if args.warm_procs > 0:
        warm_s = min(args.warm_s, 0.35 * (deadline - time.monotonic()))
        argv_tail = ["--only", ",".join(args.sections)] + (["--smoke"] if args.smoke else [])
        reports = warm.run_workers(
            Path(__file__).resolve(),
            argv_tail,
            args.warm_procs,
            warm_s,
            Path("/tmp/tritonlab-tune-warm"),
            log,
        )
        result["warm_up"] = reports
        kinds = {(sec.name, impl.name): impl.kind for sec in sections for impl in sec.impls}
        for r in reports:
            if r["ok"]:
                warm_ok.add((r["impl"], r["case"]))
            elif (
                kinds.get((r["section"], r["impl"])) == "variant"
                and "out of memory" not in r["error"].lower()
            ):
                warm_errors[(r["impl"], r["group"])] = (
                    f"warm-up: {r['error']}"  # a compile error: not tried again
                )
    save()
    for i, section in enumerate(sections):
        shares = sum(s.share for s in sections[i:])
        left = deadline - time.monotonic()
        section_deadline = time.monotonic() + left * section.share / shares
        log(f"== {section.name}: {left * section.share / shares:.0f} s of {left:.0f} s left")
        clock = measure.Clock(section_deadline)
        section_result: dict[str, Any] = {"describe": section.describe, "cases": []}
        result["sections"][section.name] = section_result
        try:
            measure.run_section(
                section, section_result, clock, gpu=gpu, device=device, repeats=args.repeats,
                warm_errors=dict(warm_errors), warm_ok=warm_ok, log=log, save=save, rep_ms=args.rep_ms,
            )  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - a section that breaks must not cost the others
            section_result["error"] = f"{type(exc).__name__}: {exc}"[:400]
            log(f"section {section.name} failed: {exc}")
        save()
    save()
    log_file.close()
    print(summary.markdown(result, compact=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
