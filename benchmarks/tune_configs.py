#!/usr/bin/env python3
"""Tuning passes for the reference kernels' launch configurations, on a GPU: grids per kernel, and picks.

    python benchmarks/tune_configs.py                      # every sweep: <gpu>-tuning.json in this run's folder
    python benchmarks/tune_configs.py --only picks         # the picks only ("decode" with --pick decode)
    python scripts/bench_gpu.py --picks FILE               # then the recorded run with those picks as defaults

How the configurations in `perf/kernels/*.py` (`CONFIGS`, `BLOCK_SIZE`, ...) were chosen: four such passes in
H200 run 2026-11-29 (39df766) (`docs/gpu-runs/2026-11-29-h200-39df766/h200-tuning-pass1..4.json`). Run it again
when a kernel changes or on another GPU, and copy the winners into the kernel's module by hand (the kernels
never read a tuning file). Sections: picks, correctness, autotune, decode, softmax, rms_norm, vector_add,
copy_2d, transpose. Same protocol as `scripts/bench_gpu.py` (do_bench median, L2 flushed), whose helpers
(`scripts/gpubench/`) it uses; `--smoke` runs the plumbing on the interpreter with tiny sizes. Refuses to run
without a CUDA GPU otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tuning_sweeps  # noqa: E402
from gpubench import autotune, common, families  # noqa: E402
from gpubench.common import Recorder, bench, empty_cache, log, section  # noqa: E402

# the 2-D kernels' (block_m, block_n, num_warps) grids
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
ROW_SPECS = {  # the row kernels' (dtype name, row length) shapes
    "softmax": [(dt, n) for dt in ("float32", "bfloat16") for n in (1024, 4096, 16384, 32768)],
    "rms_norm": [("bfloat16", 4096), ("bfloat16", 8192), ("float32", 4096)],
}


def explore_sections(torch, args: argparse.Namespace) -> dict[str, Any]:
    """name -> the tuning sweep it runs (each one family function)."""
    from tritonlab.perf.kernels import load

    picks_only = set(filter(None, args.pick.split(","))) or None
    sections: dict[str, Any] = {
        "picks": lambda: tuning_sweeps.explore_picks(torch, picks_only),
        "correctness": lambda: families.check_all(torch),
        "autotune": lambda: autotune.autotune_study(torch, load("matmul")),
        "decode": lambda: tuning_sweeps.explore_decode(torch, load("matmul")),
    }
    for name, specs in ROW_SPECS.items():
        shapes = [(getattr(torch, dt), n) for dt, n in specs]
        sections[name] = lambda name=name, shapes=shapes: tuning_sweeps.explore_rows(
            torch, name, load(name), shapes
        )
    sections["vector_add"] = lambda: tuning_sweeps.explore_vector_add(torch, load("vector_add"))
    for name, grid in TWO_D_GRIDS.items():
        configs = [{"block_m": m, "block_n": n, "num_warps": w} for m, n, w in grid]
        sections[name] = lambda name=name, configs=configs: tuning_sweeps.explore_2d(
            torch, name, load(name), configs
        )
    return sections


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: this run's folder docs/gpu-runs/<date>-<gpu>-<commit>",
    )
    ap.add_argument("--only", default="", help="comma-separated sections to run (default: all)")
    ap.add_argument("--pick", default="", help="with --only picks: 'decode' to re-pick the decode GEMM only")
    ap.add_argument(
        "--smoke", action="store_true", help="CPU plumbing test (TRITON_INTERPRET=1); measures nothing"
    )
    args = ap.parse_args(argv)
    if args.smoke:
        common.SMOKE = True
        autotune.TUNE_SHAPES, autotune.HOLDOUT_SHAPES = [(64, 64, 64), (128, 64, 64)], [(64, 128, 64)]
        autotune.MM_SPACE = [autotune.MM_SPACE[3], autotune.MM_SPACE[7], autotune.MM_SPACE[-1]]
        if args.out is None:
            ap.error("--smoke measures nothing: name the folder for its JSON with --out")
    ok, why = bench.gpu_status()
    if not ok and not common.SMOKE:
        print(bench.REFUSAL.format(why=why), file=sys.stderr)
        return 2
    import torch

    from tritonlab.perf.peaks import measure_peaks

    torch.manual_seed(1234)
    env = common.versions_env()
    if args.out is None:
        import gpu_runs

        args.out = gpu_runs.todays_folder(env.get("gpu", "gpu"))
    rec = Recorder(args.out, "smoke" if common.SMOKE else bench.gpu_slug(env.get("gpu", "gpu")), env)
    peaks = {"copy_gbps": 1.0, "matmul_bf16_tflops": 1.0} if common.SMOKE else measure_peaks()
    only = set(filter(None, args.only.split(",")))
    tuning: dict[str, Any] = {"peaks": peaks}
    for key, run in explore_sections(torch, args).items():
        if not only or key in only:
            tuning[key] = section(run, key)()
            rec.write("tuning", tuning)
            empty_cache(torch)
    log(f"tuning passes written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
