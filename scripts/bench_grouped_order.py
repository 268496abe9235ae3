#!/usr/bin/env python3
"""Time lesson 9's `grouped-matmul-order` kernel in row-major order (GROUP_M = 1) against grouped orders.

    python scripts/bench_grouped_order.py                # on a CUDA GPU: docs/gpu-runs/<run>/<gpu>-grouped-order.json
    TRITON_INTERPRET=1 python scripts/bench_grouped_order.py --smoke   # plumbing on the interpreter, no timing

The kernel is the exercise's reference solution, loaded from the course folder: one kernel, one tile size, so
the only thing that changes between rows is the order in which program ids take their tiles, and with it how
often the A row-blocks and B column-blocks that running programs share are still in L2. Each timing uses
triton.testing.do_bench (the L2 is flushed before every call, so each call starts cold). The JSON records
date, GPU, driver and versions (tritonlab.perf.bench.environment); lesson 9 quotes nothing that this run did
not write.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tritonlab.perf import bench  # noqa: E402

SOLUTION = ROOT / "course" / "09-matmul-fusion" / "exercises" / "grouped-matmul-order" / "solution.py"
# (M, N, K): square and wide outputs, large enough that one wave of programs cannot keep every block in L2
SHAPES = [(4096, 4096, 4096), (8192, 8192, 4096), (16384, 16384, 2048), (4096, 16384, 4096)]
SMOKE_SHAPES = [(64, 48, 32)]
GROUPS = [1, 4, 8, 16]
TILE = (128, 128)
SMOKE_TILE = (16, 16)


def load_solution() -> Any:
    spec = importlib.util.spec_from_file_location("grouped_matmul_order_solution", SOLUTION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def time_orders(
    shapes: list[tuple[int, int, int]], groups: list[int], tile: tuple[int, int], gpu: bool
) -> list[dict]:
    """One row per (shape, GROUP_M): median/p20/p80 ms, TFLOP/s, and the speed-up over GROUP_M = 1."""
    import torch

    mod = load_solution()
    device = "cuda" if gpu else "cpu"
    dtype = torch.float16 if gpu else torch.float32
    rows = []
    for m, n, k in shapes:
        torch.manual_seed(0)
        a = torch.randn(m, k, device=device, dtype=dtype)
        b = torch.randn(k, n, device=device, dtype=dtype)
        reference = (a.float() @ b.float()) if not gpu else None
        base = None
        for g in groups:
            c = mod.grouped_matmul(a, b, tile[0], tile[1], g)
            if reference is not None:
                assert torch.allclose(c.float(), reference, atol=1e-3, rtol=1e-3), (
                    f"wrong result at GROUP_M={g}"
                )
            t = bench.time_ms(
                lambda a=a, b=b, g=g: mod.grouped_matmul(a, b, tile[0], tile[1], g), gpu=gpu, rep=100
            )
            base = t["ms"] if g == 1 else base
            rows.append(
                {
                    "M": m,
                    "N": n,
                    "K": k,
                    "dtype": str(dtype).removeprefix("torch."),
                    "tile": list(tile),
                    "group_m": g,
                    **t,
                    "tflops": bench.tflops(2.0 * m * n * k, t["ms"]),
                    "speedup_vs_row_major": (base / t["ms"]) if base else None,
                }
            )
            print(
                f"M={m} N={n} K={k} GROUP_M={g:>2}: {t['ms']:.3f} ms "
                f"({rows[-1]['tflops']:.1f} TFLOP/s, ×{rows[-1]['speedup_vs_row_major'] or 1:.2f} vs row-major)",
                flush=True,
            )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: this run's folder docs/gpu-runs/<date>-<gpu>-<commit>",
    )
    ap.add_argument("--smoke", action="store_true", help="interpreter, tiny shape: tests the plumbing only")
    args = ap.parse_args()
    ok, why = bench.gpu_status()
    if not ok and not args.smoke:
        print(bench.REFUSAL.format(why=why), file=sys.stderr)
        return 2
    env = bench.environment()
    rows = time_orders(
        SMOKE_SHAPES if args.smoke else SHAPES, GROUPS, SMOKE_TILE if args.smoke else TILE, gpu=not args.smoke
    )
    prefix = "smoke" if args.smoke else bench.gpu_slug(env.get("gpu", "gpu"))
    if args.out is None:
        if args.smoke:
            ap.error("--smoke measures nothing: name the folder for its JSON with --out")
        sys.path.insert(0, str(ROOT / "scripts"))
        import gpu_runs

        args.out = gpu_runs.todays_folder(env.get("gpu", "gpu"))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{prefix}-grouped-order.json"
    path.write_text(json.dumps({"env": env, "rows": rows}, indent=1, default=str) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
