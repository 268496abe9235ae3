"""The recorded run's benchmark families, one function each: `(torch, peaks) -> JSON payload`."""

from __future__ import annotations

import time
from typing import Any

from gpubench import common
from gpubench.common import bench, dev, empty_cache, log, sync, sz, timed


def check_all(torch) -> list[dict]:
    from tritonlab.perf.kernels import cases as C
    from tritonlab.perf.kernels.selfcheck import SMALL_CASES, check

    out = []
    for name, shape, dtype, cfg in SMALL_CASES:
        r = check(name, shape, dtype, dev(), cfg)
        out.append({**r.__dict__, "ok": r.ok, "size": "small"})
    for name in C.BUILDERS:
        for case in C.cases_for(name, dev(), tiny=common.SMOKE):
            r = check(name, case.shape, C.DT[case.dtype], dev())
            out.append({**r.__dict__, "ok": r.ok, "size": "benchmarked"})
            empty_cache(torch)
    bad = [r for r in out if not r["ok"]]
    log(f"correctness: {len(out) - len(bad)}/{len(out)} ok" + (f"; FAILED: {bad}" if bad else ""))
    return out


def main_rows(torch, peaks, runs: int = 3) -> list[dict]:
    """Every case of every reference kernel next to its peers, `runs` times interleaved (run 1 of every case,
    then run 2, ...), folded into one row per case: medians with their spread (perf/targets.combine)."""
    from tritonlab.perf import targets
    from tritonlab.perf.kernels import cases as C

    timed_runs: list[list[dict]] = []
    for run in range(runs):
        timed_runs.append([])
        for name in C.BUILDERS:
            for case in C.cases_for(name, dev(), tiny=common.SMOKE):
                row = bench.measure_case(case, peaks, gpu=common.gpu())
                timed_runs[-1].append(row)
                log(f"run {run + 1}/{runs}: " + bench.format_rows([row]))
                empty_cache(torch)
    return targets.combine(timed_runs)


def roofline(rows: list[dict], peaks: dict) -> dict:
    """The roofline plot's points: each case's intensity and each implementation's rates."""
    rates = ("ms", "gbps", "tflops", "pct_copy", "pct_matmul")
    return {
        "peaks": peaks,
        "points": [
            {
                "kernel": r["kernel"],
                "dtype": r["dtype"],
                "shape": r["shape"],
                "bytes": r["bytes"],
                "flops": r["flops"],
                "intensity": bench.intensity(r["flops"], r["bytes"]) if r["flops"] else None,
                "impls": {k: {kk: v.get(kk) for kk in rates} for k, v in r["impls"].items() if "ms" in v},
            }
            for r in rows
        ],
    }


def size_sweeps(torch, peaks) -> dict:
    from tritonlab.perf.kernels import cases as C

    sizes = [2**p for p in range(12, sz(29, 15), 2)]
    rows = [
        bench.measure_case(c, peaks, rep=sz(50, 5), gpu=common.gpu())
        for c in C.vector_add_cases(dev(), sizes)
    ]
    return {"vector_add_fp32": rows}


def bottlenecks(torch, peaks) -> dict:
    from tritonlab.perf.kernels.cases_memory import elementwise_chain_cases
    from tritonlab.perf.kernels.vector_add import vector_add

    chain = bench.measure_case(elementwise_chain_cases(dev(), sz(2**28, 4096))[0], peaks, gpu=common.gpu())
    n = 1024
    x, y = torch.randn(n, device=dev()), torch.randn(n, device=dev())
    tiny: dict[str, Any] = {"n": n, "bytes": 3 * n * 4, "impls": {}}
    for name, fn in (("torch", lambda: torch.add(x, y)), ("triton", lambda: vector_add(x, y))):
        t = bench.time_ms(fn, rep=sz(50, 5), gpu=common.gpu())
        if common.gpu():
            t["ms_hidden_launch"] = bench.time_ms(fn, rep=50, hide_launch=True)["ms"]
        for _ in range(50):
            fn()
        sync(torch)
        calls = sz(2000, 20)
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync(torch)
        t["wall_us_per_call"] = (time.perf_counter() - t0) / calls * 1e6
        t["gbps"] = bench.gbps(3 * n * 4, t["ms"])
        tiny["impls"][name] = t
    s = sz(8192, 64)
    a = torch.randn(s, s, device=dev()).to(torch.bfloat16)
    b = torch.randn(s, s, device=dev()).to(torch.bfloat16)
    from tritonlab.perf.kernels.matmul import matmul

    mm: dict[str, Any] = {"shape": [s, s, s], "flops": 2 * s**3, "bytes": 3 * s**2 * 2, "impls": {}}
    for name, fn in (("cuBLAS", lambda: torch.matmul(a, b)), ("triton", lambda: matmul(a, b))):
        t = bench.time_ms(fn, rep=sz(200, 5), gpu=common.gpu())
        t["tflops"] = bench.tflops(2 * s**3, t["ms"])
        t["pct_matmul"] = 100 * t["tflops"] / peaks["matmul_bf16_tflops"]
        mm["impls"][name] = t
    return {
        "memory_bound_chain": chain,
        "launch_bound_tiny_add": tiny,
        "compute_bound_matmul": mm,
        "peaks": peaks,
    }


def block_sweep(torch) -> dict:
    from tritonlab.perf.kernels.vector_add import vector_add

    n = sz(2**26, 2**14)
    x, y = torch.randn(n, device=dev()), torch.randn(n, device=dev())
    blocks = [128, 256, 512, 1024, 2048, 4096, 8192]
    warps = [1, 2, 4, 8, 16]
    values = []
    for w in warps:
        row = []
        for bs in blocks:
            t = timed(lambda bs=bs, w=w: vector_add(x, y, block_size=bs, num_warps=w), rep=50)
            row.append(bench.gbps(3 * n * 4, t["ms"]) if "ms" in t else None)
        values.append(row)
    t = bench.time_ms(lambda: torch.add(x, y), rep=sz(50, 5), gpu=common.gpu())
    return {
        "kernel": "vector_add",
        "n": n,
        "dtype": "fp32",
        "x": blocks,
        "y": warps,
        "values": values,
        "xlabel": "BLOCK_SIZE",
        "ylabel": "num_warps",
        "unit": "GB/s",
        "torch_add_gbps": bench.gbps(3 * n * 4, t["ms"]),
    }


def fusion(torch, peaks) -> dict:
    from tritonlab.perf.kernels import cases as C
    from tritonlab.perf.kernels.matmul import matmul

    rows = []
    for shape in sz(((8192, 8192, 8192), (4096, 4096, 4096), (8192, 8192, 1024)), ((64, 64, 64),)):
        case = C.matmul_bias_gelu_cases(dev(), (shape,))[0]
        a, b, bias = case.make()
        case.peers["triton matmul + torch bias/gelu"] = lambda a, b, c: torch.nn.functional.gelu(
            matmul(a, b) + c
        )
        case.peers["cuBLAS matmul only"] = lambda a, b, c: torch.matmul(a, b)
        rows.append(bench.measure_case(case, peaks, gpu=common.gpu()))
        log(bench.format_rows(rows[-1:]))
    return {"rows": rows}


def current_configs() -> dict:
    """The launch configurations the recorded run uses (so the JSON says exactly what was measured)."""
    from tritonlab.perf.kernels import load

    mm, mbg, sm, rn, va, tr, c2 = (
        load(n)
        for n in ("matmul", "matmul_bias_gelu", "softmax", "rms_norm", "vector_add", "transpose", "copy_2d")
    )
    return {
        "matmul": mm.CONFIGS,
        "matmul_bias_gelu": mbg.CONFIGS,
        "softmax": {f"{k[0]},{k[1]}": v for k, v in sm.CONFIGS.items()},
        "rms_norm": {f"{k[0]},{k[1]}": v for k, v in rn.CONFIGS.items()},
        "vector_add": {
            "block_size": va.BLOCK_SIZE,
            "num_warps": va.NUM_WARPS,
            "persistent": va.PERSISTENT,
            "stages": va.STAGES,
        },
        "transpose": tr.CONFIGS,
        "copy_2d": {"block_m": c2.BLOCK_M, "block_n": c2.BLOCK_N, "num_warps": c2.NUM_WARPS},
        "attention": {"by_head_dim": load("attention").CONFIGS, "causal": load("attention").CAUSAL_CONFIGS},
        "attention_backward": load("attention_backward").CONFIGS,
        "matmul_tma": load("matmul_tma").CONFIGS,
        "matmul_fp8": load("matmul_fp8").CONFIGS,
    }


def apply_picks(picks: dict) -> dict:
    """Install a tuning pass's winners (benchmarks/tune_configs.py) as the kernels' default configurations for this process."""
    from tritonlab.perf.kernels import load

    mm, mbg, sm, va = load("matmul"), load("matmul_bias_gelu"), load("softmax"), load("vector_add")
    applied = {}
    if picks.get("large"):
        mm.CONFIGS["large"] = applied["matmul large"] = picks["large"]
    if picks.get("decode"):
        mm.CONFIGS["decode"] = applied["matmul decode"] = picks["decode"]
    if picks.get("mbg_large"):
        mbg.CONFIGS["large"] = applied["matmul_bias_gelu large"] = picks["mbg_large"]
    for key, cfg in (picks.get("softmax") or {}).items():
        if cfg:
            n, e = (int(v) for v in key.split(","))
            sm.CONFIGS[(n, e)] = applied[f"softmax {key}"] = cfg
    if picks.get("vector_add"):
        va.BLOCK_SIZE = picks["vector_add"]["block_size"]
        va.NUM_WARPS = picks["vector_add"]["num_warps"]
        va.PERSISTENT = picks["vector_add"].get("persistent", 0)
        va.STAGES = picks["vector_add"].get("stages", 1)
        applied["vector_add"] = picks["vector_add"]
    log(f"applied picks: {applied}")
    return applied
