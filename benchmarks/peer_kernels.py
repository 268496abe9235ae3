"""What the fastest peers launch, beside what our reference kernels launch (issues 38 and 39): for each
implementation of a compute-bound `bench` case (ours and every peer), the GPU kernels one call runs, each with
its grid, its block (threads, and so warps and warpgroups), its registers per thread, its shared memory and its
median time, from the CUDA activity records `torch.profiler` (Kineto/CUPTI) writes.

A warp-specialised Hopper kernel shows in these fields: a block of 3 warpgroups (384 threads: one loads, two
compute) or 2, with fewer registers per thread at launch than a one-role kernel of the same tile (the
compute warpgroups raise theirs with `setmaxnreg` after launch). That is what `perf/targets.toml` could not
say about cuDNN's attention and cuBLAS's fp8 GEMM ("what cuDNN does was not measured").

    python benchmarks/peer_kernels.py [--kernels attention attention_backward matmul_fp8 matmul_tma]
                                      [--calls 5] [--compile] [--out FILE.json]

Needs a GPU (the cases' inputs are made on it); peers a build cannot run are rows with their error.
`--compile` adds the `torch.compile` peers (each compiles first: minutes). Also records whether this Triton
has Gluon's Hopper pieces (`warpgroup_mma`, `warp_specialize`), the route to the same structure from Triton.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

#: kernel -> the shapes profiled (a subset of `bench`'s: one per head dim / one large GEMM and the decode one)
SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    "attention": ((4, 32, 4096, 128), (4, 32, 4096, 64)),
    "attention_backward": ((4, 32, 4096, 128), (4, 32, 4096, 64)),
    "matmul_fp8": ((4096, 4096, 4096), (16, 4096, 4096)),
    "matmul_tma": ((4096, 4096, 4096),),
}
#: the Kineto kernel-record fields kept, under shorter names
FIELDS = {
    "grid": "grid",
    "block": "block",
    "registers per thread": "regs",
    "shared memory": "smem",
    "blocks per SM": "blocks_per_sm",
    "warps per SM": "warps_per_sm",
    "est. achieved occupancy %": "occupancy_pct",
}


def gluon_pieces() -> dict[str, bool]:
    """Whether this Triton has the Gluon names a warp-specialised Hopper kernel would be written with."""
    found: dict[str, bool] = {}
    try:
        from triton.experimental import gluon  # noqa: F401
        from triton.experimental.gluon import language as gl
    except Exception:  # noqa: BLE001 - absent in older Triton: that is the answer
        return {"gluon": False}
    found["gluon"] = True
    found["warp_specialize"] = hasattr(gl, "warp_specialize")
    try:
        from triton.experimental.gluon.language.nvidia import hopper
    except Exception:  # noqa: BLE001
        found["hopper"] = False
        return found
    found["hopper"] = True
    for name in ("warpgroup_mma", "warpgroup_mma_wait", "tma", "mbarrier"):
        found[name] = hasattr(hopper, name)
    return found


def kernels_of(fn: Any, args: tuple[Any, ...], calls: int) -> list[dict[str, Any]]:
    """The GPU kernels `calls` calls of fn(*args) launch, one row per kernel name: how many launches per call,
    the median time of one, and the launch's fields (grid, block, registers, shared memory, occupancy)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn(*args)  # compile / prepare outside the profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(*args)
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as trace:
        prof.export_chrome_trace(trace.name)
        events = json.loads(Path(trace.name).read_text()).get("traceEvents", [])
    by_name: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") != "kernel":
            continue
        row = by_name.setdefault(e["name"], {"name": e["name"], "durations_us": []})
        row["durations_us"].append(float(e.get("dur", 0.0)))
        for key, short in FIELDS.items():
            if key in e.get("args", {}):
                row.setdefault(short, e["args"][key])
    rows = []
    for row in by_name.values():
        d = row.pop("durations_us")
        block = row.get("block") or [0, 0, 0]
        threads = int(block[0]) * int(block[1]) * int(block[2])
        row.update(
            launches_per_call=len(d) / calls,
            median_us=round(statistics.median(d), 2),
            threads=threads,
            warps=threads // 32,
        )
        rows.append(row)
    rows.sort(key=lambda r: -r["median_us"] * r["launches_per_call"])
    return rows


def profile_case(case: Any, calls: int, with_compile: bool) -> list[dict[str, Any]]:
    """Ours and each peer of one case: its kernels, and the whole call's kernel time and TFLOP/s."""
    import torch

    args = case.make()
    out = []
    impls = {"ours": case.ours, **case.peers}
    for name, fn in impls.items():
        if name == "torch.compile" and not with_compile:
            continue
        row: dict[str, Any] = {"case": case.label, "impl": name}
        try:
            kernels = kernels_of(fn, args, calls)
        except Exception as exc:  # noqa: BLE001 - a peer this build cannot run is a row with its error
            row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            out.append(row)
            continue
        finally:
            release = getattr(fn, "release", None)
            if callable(release):
                release()
        total_us = sum(k["median_us"] * k["launches_per_call"] for k in kernels)
        row.update(
            kernels=kernels,
            kernel_us_per_call=round(total_us, 1),
            tflops=round(case.nflops / (total_us * 1e-6) / 1e12, 1) if total_us else None,
        )
        out.append(row)
    del args
    torch.cuda.empty_cache()
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| case | impl | µs/call | TFLOP/s | kernel | launches | grid | warps | regs | smem KiB | µs |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['impl']} | — | — | {r['error'][:80]} | | | | | | |")
            continue
        for i, k in enumerate(r["kernels"]):
            head = (
                f"| {r['case']} | {r['impl']} | {r['kernel_us_per_call']} | {r['tflops']} "
                if i == 0
                else "| | | | "
            )
            grid = "×".join(str(g) for g in k.get("grid", []))
            smem = round(int(k.get("smem", 0)) / 1024, 1)
            lines.append(
                f"{head}| `{k['name'][:90]}` | {k['launches_per_call']:g} | {grid} | {k['warps']} | "
                f"{k.get('regs', '')} | {smem} | {k['median_us']} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="peer_kernels.py",
        description="The GPU kernels our reference kernels and their peers launch: grid, warps, registers, "
        "shared memory, time (torch.profiler).",
    )
    parser.add_argument("--kernels", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--calls", type=int, default=5, help="profiled calls per implementation (5)")
    parser.add_argument("--compile", action="store_true", help="also the torch.compile peers (slow)")
    parser.add_argument("--out", type=Path, help="write the rows and the environment as JSON here")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("peer_kernels.py needs a GPU: torch sees none", file=sys.stderr)
        return 2
    import triton

    from tritonlab.perf.kernels.cases import cases_for

    env = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cudnn": torch.backends.cudnn.version(),
        "gluon": gluon_pieces(),
    }
    print(json.dumps(env))
    rows: list[dict[str, Any]] = []
    for kernel in args.kernels:
        for case in cases_for(kernel, "cuda"):
            if tuple(case.shape) in SHAPES[kernel]:
                rows += profile_case(case, args.calls, args.compile)
    print(table(rows))
    if args.out:
        args.out.write_text(json.dumps({"environment": env, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
