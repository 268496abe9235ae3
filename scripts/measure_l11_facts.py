#!/usr/bin/env python3
"""Lesson 11's GPU-only facts (issue 35), measured on an NVIDIA GPU and written to one JSON file.

    python scripts/measure_l11_facts.py --out docs/gpu-runs/<date>-h200-<commit>/
    python scripts/measure_l11_facts.py --only dynamo,fixed_cost --out /tmp/l11

Sections (--only, comma-separated; all by default):

- dynamo: what torch.compile does with the lesson's kernels on the real stack, from
  course/11-training/examples/compile_graph_breaks.py: graphs and graph breaks of the plain launcher, the
  autograd.Function, `torch.compiler.disable`, `.item()`, custom_op and triton_op; fullgraph=True with the
  default backend (Inductor) and with aot_eager, forward and backward, and the largest gradient difference
  from eager. tests/test_course_facts_l11.py proves the counts on a CPU with the interpreter standing in for
  the GPU; this is the same on the GPU, with Inductor generating the code around the kernels.
- fixed_cost: where the RMSNorm backward's time per call goes that does not grow with the rows (24.1 µs in the
  2026-12-02 run, of which the second kernel and its buffer explain 3.4 µs). Times at several heights of one
  width (4096 bf16) give a cost per row (slope) and a cost per call (intercept) for: the whole reference
  function, its atomic variant, its main kernel alone, its dw-summing kernel alone, an empty kernel, a Triton
  kernel that only streams the same bytes (read x and dy, write dx) on the same persistent grid, and
  torch.add(x, dy, out=dx) (same bytes). Each is timed twice: with do_bench (the lesson's protocol: an L2
  flush, then events around the call) and with the GPU kept busy until the call is queued
  (tritonlab.perf.bench.time_hidden_launch), so that host launch overhead inside do_bench's interval shows
  as the difference between the two intercepts.
- layernorm: the lesson's own LayerNorm backward (examples/layernorm_training.py) at 16384 × 4096 bf16 against
  torch autograd of F.layer_norm: ms, GB/s, share of the copy bandwidth.

Refuses to run (exit 2) without a CUDA GPU or with TRITON_INTERPRET set; --help works anywhere.
`--dry-run` (with TRITON_INTERPRET=1, no GPU) runs every code path on the interpreter at toy sizes with wall-clock
timing, to catch mistakes before a GPU run; its numbers mean nothing and it writes no file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "course" / "11-training"
sys.path.insert(0, str(ROOT / "src"))

HEIGHTS = (4096, 8192, 16384, 32768, 65536)
WIDTH = 4096
DEVICE = "cuda"  # --dry-run: "cpu", with toy HEIGHTS and WIDTH
GPU = True


def fit(rows: list[int], ms: list[float]) -> dict[str, float]:
    """Least-squares time = per_call + per_row · rows: per_row in ns, per_call in µs."""
    n = len(rows)
    mx, my = sum(rows) / n, sum(ms) / n
    sxx = sum((x - mx) ** 2 for x in rows)
    slope = sum((x - mx) * (y - my) for x, y in zip(rows, ms, strict=True)) / sxx
    return {"ns_per_row": slope * 1e6, "us_per_call": (my - slope * mx) * 1e3}


def dynamo(torch: Any) -> dict[str, Any]:
    sys.path.insert(0, str(LESSON / "examples"))
    import compile_graph_breaks as c

    x, w, b = c.inputs()
    out: dict[str, Any] = {"dynamo_sees_triton": c.dynamo_sees_triton()}
    for backend in ("inductor", "aot_eager"):
        try:
            out[f"traced ({backend})"] = c.traced_kernels(backend=backend)
        except Exception as exc:  # recorded: a failure here is the finding
            out[f"traced ({backend})"] = {"error": f"{type(exc).__name__}: {exc}"[:600]}
        try:
            out[f"triton_op ({backend})"] = c.triton_op_demo(backend=backend)
        except Exception as exc:
            out[f"triton_op ({backend})"] = {"error": f"{type(exc).__name__}: {exc}"[:600]}
    out["torch.compiler.disable"] = c.counts(c.block_disabled, x, w, b)
    out[".item()"] = c.counts(c.block_item, x)
    out["custom_op"] = c.counts(c.block_custom_op, x)
    return out


def fixed_cost(torch: Any, peaks: dict) -> dict[str, Any]:
    import triton
    import triton.language as tl

    from tritonlab.perf import bench
    from tritonlab.perf.kernels import rms_norm_backward as rb

    @triton.jit
    def empty_kernel(x_ptr):
        pass

    @triton.jit
    def stream_kernel(x_ptr, dy_ptr, dx_ptr, M, N, rows_per_program, BLOCK_N: tl.constexpr):
        pid = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        cmask = cols < N
        first = (pid * rows_per_program).to(tl.int64)
        for i in range(0, tl.minimum(rows_per_program, M - first)):
            row = first + i
            x = tl.load(x_ptr + row * N + cols, mask=cmask, other=0.0)
            dy = tl.load(dy_ptr + row * N + cols, mask=cmask, other=0.0)
            tl.store(dx_ptr + row * N + cols, x + dy, mask=cmask)

    def parts(m: int) -> dict[str, Any]:
        dtype = torch.bfloat16 if GPU else torch.float32  # the interpreter computes raw bf16 as NaN
        x = torch.randn(m, WIDTH, device=DEVICE, dtype=dtype)
        w = torch.randn(WIDTH, device=DEVICE, dtype=dtype) + 1
        dy = torch.randn(m, WIDTH, device=DEVICE, dtype=dtype)
        dx = torch.empty_like(x)
        cfg = rb.default_config(m, WIDTH, x.device)
        rows_per_program = triton.cdiv(m, int(cfg["programs"]))
        programs = triton.cdiv(m, rows_per_program)
        partial = torch.empty((programs, WIDTH), device=DEVICE, dtype=torch.float32)
        dw = torch.empty(WIDTH, device=DEVICE, dtype=dtype)
        block = triton.next_power_of_2(WIDTH)

        def main_only() -> None:
            rb._rms_bwd_kernel[(programs,)](
                x, w, dy, dx, partial, m, WIDTH, rows_per_program, x.stride(0), dy.stride(0), dx.stride(0),
                1e-6, BLOCK_N=block, ROWS=int(cfg.get("rows", 1)), ATOMIC=False,
                PREFETCH=rb.prefetches(cfg, WIDTH), num_warps=int(cfg["num_warps"]),
            )  # fmt: skip

        def sum_only() -> None:
            rb._sum_rows_kernel[(triton.cdiv(WIDTH, 256),)](
                partial, dw, programs, WIDTH, BLOCK_P=16, BLOCK_C=256
            )

        return {
            "whole function": lambda: rb.rms_norm_backward(x, w, dy),
            "atomic variant": lambda: rb.rms_norm_backward(x, w, dy, atomic=True),
            "main kernel alone": main_only,
            "dw-summing kernel alone": sum_only,
            "empty kernel": lambda: empty_kernel[(1,)](x),
            "stream same bytes, same grid": lambda: stream_kernel[(programs,)](
                x, dy, dx, m, WIDTH, rows_per_program, BLOCK_N=block, num_warps=int(cfg["num_warps"])
            ),
            "torch.add(x, dy, out=dx)": lambda: torch.add(x, dy, out=dx),
        }

    times: dict[str, dict[str, list[float]]] = {}
    for m in HEIGHTS:
        for name, fn in parts(m).items():
            fn()
            for timer, hide in (("do_bench", False), ("hidden_launch", True)):
                ms = bench.time_ms(fn, warmup=10, rep=50, gpu=GPU, hide_launch=hide)["ms"]
                times.setdefault(name, {}).setdefault(timer, []).append(ms)
        if GPU:
            torch.cuda.empty_cache()
    result: dict[str, Any] = {
        "width": WIDTH,
        "dtype": "bf16" if GPU else "fp32",
        "heights": list(HEIGHTS),
        "copy_gbps": peaks.get("copy_gbps"),
    }
    for name, by_timer in times.items():
        result[name] = {timer: {"ms": ms, **fit(list(HEIGHTS), ms)} for timer, ms in by_timer.items()}
    return result


def layernorm(torch: Any, peaks: dict) -> dict[str, Any]:
    sys.path.insert(0, str(LESSON / "examples"))
    import layernorm_training as ln

    from tritonlab.perf import bench

    m, n = (16384, 4096) if GPU else (16, 48)
    dtype = torch.bfloat16 if GPU else torch.float32
    x = torch.randn(m, n, device=DEVICE, dtype=dtype)
    w = torch.randn(n, device=DEVICE, dtype=dtype)
    b = torch.randn(n, device=DEVICE, dtype=dtype)
    dy = torch.randn(m, n, device=DEVICE, dtype=dtype)
    _, mean, rstd = ln.layer_norm_fwd(x, w, b)
    ms = bench.time_ms(lambda: ln.layer_norm_bwd(x, w, dy, mean, rstd), gpu=GPU)["ms"]
    xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
    y = torch.nn.functional.layer_norm(xr, (n,), wr, br)
    ms_torch = bench.time_ms(lambda: torch.autograd.grad(y, (xr, wr, br), dy, retain_graph=True), gpu=GPU)[
        "ms"
    ]
    gbps = 3 * m * n * x.element_size() / ms / 1e6
    return {
        "shape": [m, n],
        "dtype": str(dtype).removeprefix("torch."),
        "ms": ms,
        "gbps": gbps,
        "pct_copy": 100 * gbps / peaks["copy_gbps"] if peaks.get("copy_gbps") else None,
        "torch_autograd_ms": ms_torch,
    }


SECTIONS = ("dynamo", "fixed_cost", "layernorm")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for lessons-11-facts-<gpu>.json")
    ap.add_argument("--only", default="", help="comma-separated: " + ", ".join(SECTIONS))
    ap.add_argument(
        "--dry-run", action="store_true", help="every code path on the interpreter, toy sizes, no file"
    )
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s] or list(SECTIONS)
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        ap.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    from tritonlab.perf import bench

    global DEVICE, GPU, HEIGHTS, WIDTH
    if args.dry_run:
        if not bench.interpreting():
            print("--dry-run runs on Triton's interpreter: set TRITON_INTERPRET=1", file=sys.stderr)
            return 2
        DEVICE, GPU, HEIGHTS, WIDTH = "cpu", False, (8, 16), 48
        only = [
            s for s in only if s != "dynamo"
        ]  # Dynamo does not see interpreted kernels (the tests' probe does)
    else:
        ok, why = bench.gpu_status()
        if not ok:
            print(f"measure_l11_facts.py needs an NVIDIA GPU and compiled kernels: {why}", file=sys.stderr)
            return 2
    import torch

    torch.manual_seed(35)
    env = bench.environment()
    if GPU:
        from tritonlab.perf.peaks import get_peaks

        peaks = get_peaks()
    else:
        peaks = {}
    result: dict[str, Any] = {"env": env, "peaks": peaks}
    for name in only:
        t0 = time.time()
        try:
            result[name] = dynamo(torch) if name == "dynamo" else globals()[name](torch, peaks)
        except Exception as exc:  # one failing section must not hide the others
            result[name] = {"error": f"{type(exc).__name__}: {exc}"[:600]}
        print(
            f"--- {name} ({time.time() - t0:.0f} s): {json.dumps(result[name], default=str)[:2000]}",
            flush=True,
        )
    if args.dry_run:
        failed = [name for name in only if "error" in result[name]]
        print("dry run: " + (f"failed: {', '.join(failed)}" if failed else "every section ran"))
        return 1 if failed else 0
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"lessons-11-facts-{bench.gpu_slug(env.get('gpu', 'gpu'))}.json"
    path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
