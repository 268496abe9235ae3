#!/usr/bin/env python3
"""Check and benchmark every reference kernel on a GPU, and record the lessons' GPU data (issue 8).

    python scripts/bench_gpu.py                 # the recorded run: docs/gpu-runs/<date>-<gpu>-<commit>/<gpu>-*.json
    python scripts/bench_gpu.py --picks FILE    # the same with a tuning pass's picks as the default configs

Writes, for GPU slug ``<gpu>`` (e.g. h200): ``-results.json`` (correctness, every case side by side with its
peers as the median of 3 interleaved runs with their spread, the restated targets of perf/targets.py),
``-bottlenecks.json`` (lesson 2), ``-block-sweep.json`` (lesson 6), ``-roofline.json``, ``-fusion.json`` (lesson 9), ``-autotune-holdout.json`` (lesson 10). Every file records
date, GPU, driver, CUDA, Triton, torch and Python versions. ``scripts/bench_report.py`` renders
docs/benchmarks.md and the plots from these files alone. Refuses to run without a CUDA GPU.

Each benchmark family is one function of the `gpubench` package beside this script: `gpubench.families`
(the recorded run), `gpubench.autotune` (the lesson-10 study), over the helpers of `gpubench.common`. This file
only picks the families and records their JSON. The tuning sweeps that chose the kernels' launch configurations
are `benchmarks/tune_configs.py`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpubench import autotune, common, families  # noqa: E402
from gpubench.common import Recorder, bench, log, section  # noqa: E402

from tritonlab.perf import targets  # noqa: E402
from tritonlab.perf.peaks import measure_peaks, save_peaks  # noqa: E402


def recorded_run(torch, peaks: dict, rec: Recorder, args: argparse.Namespace, want) -> dict:  # noqa: ANN001
    """The recorded run: results (correctness, rows, targets, size sweeps), then one file per family."""
    from tritonlab.perf.kernels import load

    results: dict[str, Any] = {"peaks": peaks}
    if args.picks:
        picks = json.loads(args.picks.read_text()).get("picks", {})
        results["configs_from_explore_pass"] = families.apply_picks(picks)
    results["configs"] = families.current_configs()
    if want("correctness"):
        results["correctness"] = section(lambda: families.check_all(torch), "correctness")()
        rec.write("results", results)
    if want("main"):
        rows = section(lambda: families.main_rows(torch, peaks, args.runs), "main")()
        results["rows"] = rows if isinstance(rows, list) else []
        results["runs"] = args.runs
        results["targets"] = targets.evaluate(results["rows"], peaks)
        results["size_sweeps"] = section(lambda: families.size_sweeps(torch, peaks), "size_sweeps")()
        rec.write("results", results)
        rec.write("roofline", families.roofline(results["rows"], peaks))
    for name, label, run in (
        ("bottlenecks", "bottlenecks", lambda: families.bottlenecks(torch, peaks)),
        ("block_sweep", "block-sweep", lambda: families.block_sweep(torch)),
        ("fusion", "fusion", lambda: families.fusion(torch, peaks)),
        ("autotune", "autotune-holdout", lambda: autotune.autotune_study(torch, load("matmul"))),
    ):
        if want(name):
            rec.write(label, section(run, name)())
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: this run's folder docs/gpu-runs/<date>-<gpu>-<commit>",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="CPU plumbing test on the interpreter with tiny sizes (set TRITON_INTERPRET=1); measures nothing",
    )
    ap.add_argument(
        "--picks",
        type=Path,
        default=None,
        help="a tuning JSON whose 'picks' (benchmarks/tune_configs.py --only picks) become the default configs",
    )
    ap.add_argument("--only", default="", help="comma-separated sections to run (default: all)")
    ap.add_argument("--runs", type=int, default=3, help="interleaved runs of the main table (default 3)")
    args = ap.parse_args()
    if args.smoke:
        common.SMOKE = True
        autotune.TUNE_SHAPES, autotune.HOLDOUT_SHAPES = [(64, 64, 64), (128, 64, 64)], [(64, 128, 64)]
        autotune.MM_SPACE = [autotune.MM_SPACE[3], autotune.MM_SPACE[7], autotune.MM_SPACE[-1]]
    ok, why = bench.gpu_status()
    if not ok and not common.SMOKE:
        print(bench.REFUSAL.format(why=why), file=sys.stderr)
        return 2
    import torch

    torch.manual_seed(1234)
    env = common.versions_env()
    prefix = "smoke" if common.SMOKE else bench.gpu_slug(env.get("gpu", "gpu"))
    if args.out is None:
        if common.SMOKE:
            ap.error("--smoke measures nothing: name the folder for its JSON with --out")
        import gpu_runs

        args.out = gpu_runs.todays_folder(env.get("gpu", "gpu"))
    rec = Recorder(args.out, prefix, env)
    only = set(filter(None, args.only.split(",")))

    def want(s: str) -> bool:
        return not only or s in only

    log(f"env: {env}")
    if common.SMOKE:
        env["gpu"] = "smoke-cpu"
        peaks = {"copy_gbps": 1.0, "matmul_bf16_tflops": 1.0}
    else:
        peaks = measure_peaks()
        save_peaks(env["gpu"], peaks)
    log(f"peaks: copy {peaks['copy_gbps']:.0f} GB/s, bf16 matmul {peaks['matmul_bf16_tflops']:.0f} TFLOP/s")
    results = recorded_run(torch, peaks, rec, args, want)
    if results.get("targets"):
        print("\n== targets (perf/targets.py) ==")
        for t in results["targets"]:
            meas = "n/a" if t["measured"] is None else f"{t['measured']:.3g}{t['unit']}"
            spread = f" runs {t['spread'][0]}–{t['spread'][1]}" if t.get("spread") else ""
            print(
                f"{'MET  ' if t['met'] else 'SHORT'} {t['id']:32s} {meas:>9s}{spread} (target {t['target']}{t['unit']})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
