"""Tuning sweeps (`benchmarks/tune_configs.py`): launch-configuration grids per kernel, and the picks a tuning
pass makes for the recorded run's default configurations (`scripts/bench_gpu.py --picks` applies them).

Imports the benchmark helpers of `scripts/gpubench/` (the caller puts `scripts/` on sys.path)."""

from __future__ import annotations

import json
import math
from typing import Any

from gpubench import common
from gpubench.autotune import cfg_name
from gpubench.common import bench, dev, empty_cache, log, sz, timed


def explore_vector_add(torch, mod) -> list[dict]:
    n = sz(2**28, 2**14)
    x, y = torch.randn(n, device=dev()), torch.randn(n, device=dev())
    out = []
    t = timed(lambda: torch.add(x, y))
    out.append({"peer": "torch.add (before)", **t, "gbps": bench.gbps(3 * n * 4, t["ms"])})
    for bs in (2048, 4096):
        for w in (4, 8):
            for lc, sc in (("", ""), (".cg", ""), ("", ".cs"), (".cg", ".cs")):
                t = timed(
                    lambda bs=bs, w=w, lc=lc, sc=sc: mod.vector_add(
                        x, y, block_size=bs, num_warps=w, load_cache=lc, store_cache=sc
                    )
                )
                if "ms" in t:
                    t["gbps"] = bench.gbps(3 * n * 4, t["ms"])
                out.append({"block_size": bs, "num_warps": w, "load_cache": lc, "store_cache": sc, **t})
    t = timed(lambda: torch.add(x, y))
    out.append({"peer": "torch.add", **t, "gbps": bench.gbps(3 * n * 4, t["ms"])})
    log(
        "vector_add: "
        + ", ".join(
            f"{r.get('block_size', r.get('peer'))}/{r.get('num_warps', '')}"
            f"/{r.get('load_cache', '')}{r.get('store_cache', '')}:{r.get('gbps', 0):.0f}"
            for r in out
        )
    )
    return out


def explore_2d(torch, name: str, mod, configs: list[dict]) -> list[dict]:
    out = []
    m = n = sz(16384, 128)
    for dt in (torch.float32, torch.bfloat16):
        x = (
            torch.randn(m, n + 64, device=dev()).to(dt)[:, :n]
            if name == "copy_2d"
            else torch.randn(m, n, device=dev()).to(dt)
        )
        nbytes = 2 * m * n * x.element_size()
        fn = getattr(mod, name)
        for cfg in configs:
            t = timed(lambda cfg=cfg, fn=fn, x=x: fn(x, **cfg))
            if "ms" in t:
                t["gbps"] = bench.gbps(nbytes, t["ms"])
            out.append({"dtype": str(dt), **cfg, **t})
        peer = (lambda x=x: x.contiguous()) if name == "copy_2d" else (lambda x=x: x.t().contiguous())
        t = timed(peer)
        out.append({"dtype": str(dt), "peer": "torch", **t, "gbps": bench.gbps(nbytes, t["ms"])})
    return out


def row_candidates(n: int, elem: int, looped_kind: str) -> list[dict]:
    block = 1 << (n - 1).bit_length()
    cands: list[dict] = []
    for rows in (1, 2, 4, 8, 16):
        if rows * block * elem > 131072 or (rows > 1 and rows * block > 16384):
            continue
        for w in (4, 8, 16, 32):
            per_thread = rows * block / (32 * w)
            if not 8 <= per_thread <= 32:
                continue
            cands.append({"kind": "onepass", "rows": rows, "num_warps": w, "stages": 0})
            if rows * block <= 4096:
                cands.append({"kind": "onepass", "rows": rows, "num_warps": w, "stages": 3})
    if block >= 8192:
        for chunk, w in ((1024, 4), (2048, 4), (2048, 8), (4096, 8), (4096, 16), (8192, 16)):
            cands.append({"kind": looped_kind, "chunk": chunk, "num_warps": w})
    return cands


def explore_rows(torch, name: str, mod, specs: list[tuple[Any, int]]) -> list[dict]:
    out = []
    for dt, n in specs:
        m = sz(2**26, 2**14) // n
        x = (torch.randn(m, n, device=dev()) * 3).to(dt)
        w = torch.randn(n, device=dev()).to(dt)
        nbytes = 2 * m * n * x.element_size()
        kind = "online" if name == "softmax" else "looped"
        for cfg in row_candidates(n, x.element_size(), kind):
            if name == "softmax":
                t = timed(lambda cfg=cfg, x=x: mod.softmax(x, config=cfg))
            else:
                t = timed(lambda cfg=cfg, x=x, w=w: mod.rms_norm(x, w, 1e-6, config=cfg))
            if "ms" in t:
                t["gbps"] = bench.gbps(nbytes, t["ms"])
            out.append({"dtype": str(dt), "n": n, "m": m, **cfg, **t})
        peer = (
            (lambda x=x: torch.softmax(x, -1))
            if name == "softmax"
            else (lambda x=x, w=w, n=n: torch.nn.functional.rms_norm(x, (n,), w, 1e-6))
        )
        t = timed(peer)
        out.append(
            {"dtype": str(dt), "n": n, "m": m, "peer": "torch", **t, "gbps": bench.gbps(nbytes, t["ms"])}
        )
        best = max(
            (
                r
                for r in out
                if r.get("n") == n and r.get("dtype") == str(dt) and "gbps" in r and "peer" not in r
            ),
            key=lambda r: r["gbps"],
            default=None,
        )
        log(f"{name} {dt} n={n}: best {best} torch {t.get('gbps', 0):.0f} GB/s")
    return out


DECODE_SPACE = [
    {"BN": 32, "BK": 512, "SPLIT_K": 1, "num_warps": 4, "num_stages": 3},
    {"BN": 32, "BK": 256, "SPLIT_K": 1, "num_warps": 4, "num_stages": 4},
    {"BN": 32, "BK": 512, "SPLIT_K": 1, "num_warps": 4, "num_stages": 4},
    {"BN": 16, "BK": 512, "SPLIT_K": 1, "num_warps": 4, "num_stages": 3},
    {"BN": 32, "BK": 256, "SPLIT_K": 1, "num_warps": 4, "num_stages": 6},
    {"BN": 32, "BK": 1024, "SPLIT_K": 1, "num_warps": 8, "num_stages": 2},
    {"BN": 32, "BK": 512, "SPLIT_K": 1, "num_warps": 8, "num_stages": 3},
    {"BN": 16, "BK": 1024, "SPLIT_K": 1, "num_warps": 4, "num_stages": 2},
    {"BN": 64, "BK": 512, "SPLIT_K": 2, "num_warps": 4, "num_stages": 3},
    {"BN": 64, "BK": 256, "SPLIT_K": 4, "num_warps": 4, "num_stages": 3},
    {"BN": 128, "BK": 128, "SPLIT_K": 4, "num_warps": 4, "num_stages": 4},
    {"BN": 64, "BK": 128, "SPLIT_K": 8, "num_warps": 2, "num_stages": 4},
]


def explore_decode(torch, mod) -> list[dict]:
    out = []
    m, n, k = sz((16, 4096, 4096), (16, 128, 512))
    for dt in (torch.bfloat16, torch.float16):
        a = torch.randn(m, k, device=dev()).to(dt)
        b = (torch.randn(k, n, device=dev()) / 64).to(dt)
        ref = a.double() @ b.double()
        t = timed(lambda a=a, b=b: torch.matmul(a, b), rep=60)
        out.append(
            {"dtype": str(dt), "peer": "cuBLAS (before)", **t, "tflops": bench.tflops(2 * m * n * k, t["ms"])}
        )
        for c in DECODE_SPACE:
            cfg = {"kernel": "ptr", "BM": 16, "GROUP_M": 1, **c}
            try:
                err = float((mod.matmul(a, b, config=cfg).double() - ref).norm() / ref.norm())
            except Exception as exc:
                out.append({"dtype": str(dt), **cfg, "error": str(exc)[:200]})
                continue
            t = timed(lambda cfg=cfg, a=a, b=b: mod.matmul(a, b, config=cfg), rep=60)
            if "ms" in t:
                t["tflops"] = bench.tflops(2 * m * n * k, t["ms"])
            out.append({"dtype": str(dt), **cfg, "rel_err": err, **t})
        t = timed(lambda a=a, b=b: torch.matmul(a, b), rep=60)
        out.append({"dtype": str(dt), "peer": "cuBLAS", **t, "tflops": bench.tflops(2 * m * n * k, t["ms"])})
        log(
            f"decode {dt}: "
            + ", ".join(
                f"{r.get('BN')}/{r.get('BK')}/{r.get('SPLIT_K')}:{r.get('tflops', 0):.1f}"
                for r in out
                if r.get("dtype") == str(dt)
            )
        )
    return out


# ====================================================================== explore, round 3: picks for the recorded run

LARGE_CANDIDATES = [
    {"kernel": "tma", "BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {
        "kernel": "tma",
        "BM": 128,
        "BN": 256,
        "BK": 64,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 3,
        "flatten": True,
    },
    {
        "kernel": "tma",
        "BM": 128,
        "BN": 256,
        "BK": 64,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 3,
        "warp_spec": True,
    },
    {
        "kernel": "tma",
        "BM": 128,
        "BN": 256,
        "BK": 64,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 3,
        "flatten": True,
        "warp_spec": True,
    },
]
DECODE_CANDIDATES = [
    {
        "kernel": "ptr",
        "BM": 16,
        "GROUP_M": 1,
        "SPLIT_K": 1,
        "BN": bn,
        "BK": bk,
        "num_warps": 4,
        "num_stages": st,
        "stagger": sg,
    }
    for bn, bk, st in ((32, 512, 3), (32, 512, 4), (32, 256, 4), (32, 256, 6), (16, 512, 3), (64, 256, 4))
    for sg in (False, True)
]


def _best(scores: dict[str, float], cands: dict[str, Any]) -> Any:
    return cands[max(scores, key=scores.get)] if scores else None


def explore_picks(torch, only: set[str] | None = None) -> dict:
    """Time candidate configs for the cases still short of target; return the winners (and all timings)."""
    if only == {"decode"}:
        return explore_decode_picks(torch)
    from tritonlab.perf.kernels import load

    mm, va, sm = load("matmul"), load("vector_add"), load("softmax")
    out: dict[str, Any] = {"timings": {}}
    T = out["timings"]
    # large matmul: geo mean over the three large target shapes, bf16
    shapes = sz(
        [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 11008, 4096)],
        [(64, 64, 64), (128, 128, 128), (64, 128, 64)],
    )
    ins = {
        s: (
            torch.randn(s[0], s[2], device=dev()).to(torch.bfloat16),
            (torch.randn(s[2], s[1], device=dev()) / s[2] ** 0.5).to(torch.bfloat16),
        )
        for s in shapes
    }
    scores, cands = {}, {}
    for c in LARGE_CANDIDATES:
        name = cfg_name(c)
        vals = []
        for s in shapes:
            t = timed(lambda c=c, s=s, ins=ins: mm.matmul(*ins[s], config=c), rep=100)
            vals.append(bench.tflops(2 * s[0] * s[1] * s[2], t["ms"]) if "ms" in t else 0)
        T[f"large {name}"] = vals
        if all(vals):
            scores[name], cands[name] = bench.geomean(vals), c
    out["large"] = _best(scores, cands)
    # fused bias+GELU at 8192^3
    a, b = ins[shapes[1]]
    bias = torch.randn(shapes[1][1], device=dev()).to(torch.bfloat16)
    scores, cands = {}, {}
    for c in LARGE_CANDIDATES + [{**LARGE_CANDIDATES[0], "BM": 256, "BN": 128}]:
        name = cfg_name(c)
        t = timed(lambda c=c, a=a, b=b: mm.matmul(a, b, bias=bias, activation="gelu", config=c), rep=100)
        T[f"mbg {name}"] = bench.tflops(2 * 8192**3, t["ms"]) if "ms" in t else None
        if T[f"mbg {name}"]:
            scores[name], cands[name] = T[f"mbg {name}"], c
    out["mbg_large"] = _best(scores, cands)
    ins.clear()
    empty_cache(torch)
    # decode: both dtypes, geo mean
    scores, cands = {}, {}
    kd = sz(4096, 512)
    dec = {
        dt: (torch.randn(16, kd, device=dev()).to(dt), (torch.randn(kd, kd, device=dev()) / 64).to(dt))
        for dt in (torch.bfloat16, torch.float16)
    }
    for c in DECODE_CANDIDATES:
        name = cfg_name(c) + f" bn{c['BN']} bk{c['BK']}" + (" stagger" if c["stagger"] else "")
        vals = []
        for dt in dec:
            t = timed(lambda c=c, dt=dt: mm.matmul(*dec[dt], config=c), rep=100)
            vals.append(bench.tflops(2 * 16 * 4096 * 4096, t["ms"]) if "ms" in t else 0)
        T[f"decode {name}"] = vals
        if all(vals):
            scores[name], cands[name] = bench.geomean(vals), c
    for dt in dec:
        t = timed(lambda dt=dt: torch.matmul(*dec[dt]), rep=100)
        T[f"decode cuBLAS {dt}"] = bench.tflops(2 * 16 * 4096 * 4096, t["ms"])
    out["decode"] = _best(scores, cands)
    # softmax: the bf16 long rows (and fp32 32768)
    out["softmax"] = {}
    for dt, n, cset in (
        (
            torch.bfloat16,
            16384,
            [{"kind": "onepass", "rows": 1, "num_warps": w, "stages": 0} for w in (8, 16)]
            + [
                {"kind": "online", "chunk": ch, "num_warps": w}
                for ch, w in ((4096, 8), (8192, 8), (8192, 16), (16384, 16), (16384, 32))
            ],
        ),
        (
            torch.bfloat16,
            32768,
            [{"kind": "onepass", "rows": 1, "num_warps": 32, "stages": 0}]
            + [
                {"kind": "online", "chunk": ch, "num_warps": w}
                for ch, w in ((8192, 16), (8192, 32), (16384, 16), (16384, 32), (32768, 32))
            ],
        ),
        (
            torch.float32,
            32768,
            [{"kind": "onepass", "rows": 1, "num_warps": 32, "stages": 0}]
            + [{"kind": "online", "chunk": ch, "num_warps": w} for ch, w in ((8192, 16), (16384, 32))],
        ),
    ):
        m = sz(2**26, 2**16) // n
        x = (torch.randn(m, n, device=dev()) * 3).to(dt)
        scores, cands = {}, {}
        for c in cset:
            name = json.dumps(c, sort_keys=True)
            t = timed(lambda c=c, x=x: sm.softmax(x, config=c), rep=60)
            if "ms" in t:
                scores[name], cands[name] = bench.gbps(2 * x.numel() * x.element_size(), t["ms"]), c
        T[f"softmax {dt} {n}"] = scores
        out["softmax"][f"{n},{x.element_size()}"] = _best(scores, cands)
    # vector add: plain vs persistent
    n = sz(2**28, 2**14)
    x, y = torch.randn(n, device=dev()), torch.randn(n, device=dev())
    scores, cands = {}, {}
    vcands = [{"block_size": 2048, "num_warps": 8}, {"block_size": 2048, "num_warps": 4}] + [
        {"block_size": bs, "num_warps": w, "persistent": p, "stages": st}
        for bs, w in ((2048, 8), (4096, 8))
        for p in (4, 16)
        for st in (1, 3)
    ]
    t = timed(lambda: torch.add(x, y), rep=100)
    T["vector_add torch.add before"] = bench.gbps(3 * n * 4, t["ms"])
    for c in vcands:
        name = json.dumps(c, sort_keys=True)
        t = timed(lambda c=c: va.vector_add(x, y, **c), rep=100)
        if "ms" in t:
            scores[name], cands[name] = bench.gbps(3 * n * 4, t["ms"]), c
    t = timed(lambda: torch.add(x, y), rep=100)
    T["vector_add torch.add after"] = bench.gbps(3 * n * 4, t["ms"])
    T["vector_add"] = scores
    out["vector_add"] = _best(scores, cands)
    log(f"picks: { {k: v for k, v in out.items() if k != 'timings'} }")
    return out


def explore_decode_picks(torch) -> dict:
    """Decode GEMM candidates timed with the hidden-launch timer (both dtypes, geo mean), with cuBLAS."""
    from tritonlab.perf.kernels import load

    mm = load("matmul")
    out: dict[str, Any] = {"timings": {}, "timer": "hidden-launch"}
    T = out["timings"]
    kd = sz(4096, 512)
    dec = {
        dt: (torch.randn(16, kd, device=dev()).to(dt), (torch.randn(kd, kd, device=dev()) / 64).to(dt))
        for dt in (torch.bfloat16, torch.float16)
    }
    scores, cands = {}, {}

    def t_us(fn) -> float:
        try:
            return (
                bench.time_ms(fn, warmup=10, rep=sz(60, 5), gpu=common.gpu(), hide_launch=common.gpu())["ms"]
                * 1e3
            )
        except Exception as exc:
            log(f"decode candidate failed: {exc}")
            return math.inf

    for dt in dec:
        T[f"cuBLAS {dt} us"] = t_us(lambda dt=dt: torch.matmul(*dec[dt]))
    for c in DECODE_CANDIDATES:
        name = f"bn{c['BN']} bk{c['BK']} w{c['num_warps']} s{c['num_stages']}" + (
            " stagger" if c["stagger"] else ""
        )
        us = [t_us(lambda c=c, dt=dt: mm.matmul(*dec[dt], config=c)) for dt in dec]
        T[name + " us"] = us
        if all(math.isfinite(u) for u in us):
            scores[name], cands[name] = 1.0 / bench.geomean(us), c
    for dt in dec:
        T[f"cuBLAS {dt} us (after)"] = t_us(lambda dt=dt: torch.matmul(*dec[dt]))
    out["decode"] = _best(scores, cands)
    log(f"decode picks: {T} -> {out['decode']}")
    return out
