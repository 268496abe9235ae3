#!/usr/bin/env python3
"""Check and benchmark every reference kernel on a GPU, and record the lessons' GPU data (issue 8).

    python scripts/bench_gpu.py                 # the recorded run: docs/gpu-runs/<gpu>-*.json
    python scripts/bench_gpu.py --explore       # tuning sweeps only: <gpu>-tuning.json (used to set CONFIGS)

Writes, for GPU slug ``<gpu>`` (e.g. h200): ``-results.json`` (correctness, every case side by side with its
peers as the median of 3 interleaved runs with their spread, the restated targets of perf/targets.py),
``-bottlenecks.json`` (lesson 2), ``-block-sweep.json`` (lesson 6), ``-roofline.json``, ``-fusion.json`` (lesson 9), ``-autotune-holdout.json`` (lesson 10). Every file records
date, GPU, driver, CUDA, Triton, torch and Python versions. ``scripts/bench_report.py`` renders
docs/benchmarks.md and the plots from these files alone. Refuses to run without a CUDA GPU.

Each benchmark family is one function of the `gpubench` package beside this script: `gpubench.families`
(the recorded run), `gpubench.explore` (tuning sweeps), `gpubench.autotune` (the lesson-10 study), over the
helpers of `gpubench.common`. This file only picks the families and records their JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpubench import autotune, common, explore, families  # noqa: E402
from gpubench.common import ROOT, Recorder, bench, empty_cache, log, section  # noqa: E402

from tritonlab.perf import targets  # noqa: E402
from tritonlab.perf.peaks import measure_peaks, save_peaks  # noqa: E402

# --explore: the 2-D kernels' (block_m, block_n, num_warps) grids
TWO_D_GRIDS = {
    "copy_2d": (
        (8, 512, 4),
        (16, 256, 4),
        (16, 256, 8),
        (32, 256, 8),
        (16, 512, 8),
        (64, 64, 4),
        (32, 128, 4),
    ),
    "transpose": (
        (32, 32, 4),
        (64, 64, 4),
        (64, 64, 8),
        (128, 64, 8),
        (64, 128, 8),
        (128, 128, 8),
        (32, 128, 4),
    ),
}
ROW_SPECS = {  # --explore: the row kernels' (dtype name, row length) shapes
    "softmax": [(dt, n) for dt in ("float32", "bfloat16") for n in (1024, 4096, 16384, 32768)],
    "rms_norm": [("bfloat16", 4096), ("bfloat16", 8192), ("float32", 4096)],
}


def explore_sections(torch, args: argparse.Namespace) -> dict[str, Any]:
    """name -> the tuning sweep it runs (each one family function)."""
    from tritonlab.perf.kernels import load

    picks_only = set(filter(None, args.pick.split(","))) or None
    sections: dict[str, Any] = {
        "picks": lambda: explore.explore_picks(torch, picks_only),
        "correctness": lambda: families.check_all(torch),
        "autotune": lambda: autotune.autotune_study(torch, load("matmul")),
        "decode": lambda: explore.explore_decode(torch, load("matmul")),
    }
    for name, specs in ROW_SPECS.items():
        shapes = [(getattr(torch, dt), n) for dt, n in specs]
        sections[name] = lambda name=name, shapes=shapes: explore.explore_rows(
            torch, name, load(name), shapes
        )
    sections["vector_add"] = lambda: explore.explore_vector_add(torch, load("vector_add"))
    for name, grid in TWO_D_GRIDS.items():
        configs = [{"block_m": m, "block_n": n, "num_warps": w} for m, n, w in grid]
        sections[name] = lambda name=name, configs=configs: explore.explore_2d(
            torch, name, load(name), configs
        )
    return sections


def recorded_run(torch, peaks: dict, rec: Recorder, args: argparse.Namespace, want) -> dict:  # noqa: ANN001
    """The recorded run: results (correctness, rows, targets, size sweeps), then one file per family."""
    from tritonlab.perf.kernels import load

    results: dict[str, Any] = {"peaks": peaks}
    if args.picks:
        picks = json.loads(args.picks.read_text()).get("picks", {})
        results["configs_from_explore_pass"] = explore.apply_picks(picks)
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
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "gpu-runs")
    ap.add_argument("--explore", action="store_true", help="run the tuning sweeps only")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="CPU plumbing test on the interpreter with tiny sizes (set TRITON_INTERPRET=1); measures nothing",
    )
    ap.add_argument(
        "--picks",
        type=Path,
        default=None,
        help="a tuning JSON whose 'picks' (from --explore --only picks) become the default configs",
    )
    ap.add_argument(
        "--pick", default="", help="with --explore --only picks: 'decode' to re-pick the decode GEMM only"
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
    if args.explore:
        tuning: dict[str, Any] = {"peaks": peaks}
        for key, run in explore_sections(torch, args).items():
            if want(key):
                tuning[key] = section(run, key)()
                rec.write("tuning", tuning)
                empty_cache(torch)
        return 0
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
