#!/usr/bin/env python3
"""Check and benchmark every reference kernel on a GPU, and record the lessons' GPU data (issue 8).

    python scripts/bench_gpu.py                 # the recorded run: docs/gpu-runs/<gpu>-*.json
    python scripts/bench_gpu.py --explore       # tuning sweeps only: <gpu>-tuning.json (used to set CONFIGS)

Writes, for GPU slug ``<gpu>`` (e.g. h200): ``-results.json`` (correctness, every case side by side with its
peers, the targets of issue 8), ``-bottlenecks.json`` (lesson 2), ``-block-sweep.json`` (lesson 6),
``-roofline.json``, ``-fusion.json`` (lesson 9), ``-autotune-holdout.json`` (lesson 10). Every file records
date, GPU, driver, CUDA, Triton, torch and Python versions. ``scripts/bench_report.py`` renders
docs/benchmarks.md and the plots from these files alone. Refuses to run without a CUDA GPU.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tritonlab.perf import bench  # noqa: E402
from tritonlab.perf.peaks import measure_peaks, save_peaks  # noqa: E402

LOG: list[str] = []
SMOKE = False  # --smoke: CPU interpreter, tiny sizes; tests the plumbing, measures nothing


def dev() -> str:
    return "cpu" if SMOKE else "cuda"


def sz(big, small):
    return small if SMOKE else big


def empty_cache(torch) -> None:
    if not SMOKE:
        torch.cuda.empty_cache()


def sync(torch) -> None:
    if not SMOKE:
        torch.cuda.synchronize()


def log(msg: str) -> None:
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    LOG.append(line)
    print(line, flush=True)


class Recorder:
    """Writes each JSON file as soon as its section finishes, so a killed run keeps what it measured."""

    def __init__(self, out: Path, prefix: str, env: dict[str, Any]) -> None:
        self.out, self.prefix, self.env = out, prefix, env
        out.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, payload: dict[str, Any]) -> Path:
        path = self.out / f"{self.prefix}-{name}.json"
        path.write_text(json.dumps({"env": self.env, **payload}, indent=1, default=str) + "\n")
        log(f"wrote {path}")
        return path


def section(fn, name: str = ""):
    """Run one section; log and record its exception instead of aborting the whole run."""
    name = name or fn.__name__

    def wrapper(*a, **k):
        t0 = time.time()
        log(f"--- {name}")
        try:
            return fn(*a, **k)
        except Exception as exc:
            log(f"!!! {name} failed: {type(exc).__name__}: {exc}")
            log(traceback.format_exc()[-3000:])
            return {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            log(f"--- {name} took {time.time() - t0:.1f} s")

    return wrapper


def timed(fn, rep: float = 40, warmup: float = 10) -> dict[str, float] | dict[str, str]:
    try:
        return bench.time_ms(fn, warmup=warmup, rep=sz(rep, 5), gpu=not SMOKE)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}


# ====================================================================== explore (tuning sweeps)


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
                bench.time_ms(fn, warmup=10, rep=sz(60, 5), gpu=not SMOKE, hide_launch=not SMOKE)["ms"] * 1e3
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


def apply_picks(picks: dict) -> dict:
    """Install the explore pass's winners as the kernels' default configurations for this process."""
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


# ====================================================================== autotune study (matmul)

MM_SPACE: list[dict] = [
    {"kernel": "tma", "BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"kernel": "tma", "BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 4},
    {"kernel": "tma", "BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 4},
    {"kernel": "tma", "BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
    {"kernel": "tma", "BM": 128, "BN": 128, "BK": 128, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"kernel": "tma", "BM": 256, "BN": 128, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"kernel": "tma", "BM": 64, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
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
        "BN": 128,
        "BK": 64,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 4,
        "flatten": True,
        "warp_spec": True,
    },
    {"kernel": "ptr", "BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3},
    {"kernel": "ptr", "BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4},
]
TUNE_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 11008, 4096), (2048, 8192, 2048)]
HOLDOUT_SHAPES = [
    (3072, 3072, 3072),
    (6144, 6144, 6144),
    (8192, 2048, 8192),
    (1024, 8192, 8192),
    (4096, 4096, 1024),
    (12288, 4096, 4096),
]


def cfg_name(c: dict) -> str:
    s = f"{c['kernel']} {c['BM']}x{c['BN']}x{c['BK']} w{c['num_warps']} s{c['num_stages']}"
    return s + (" flat" if c.get("flatten") else "") + (" ws" if c.get("warp_spec") else "")


def autotune_study(torch, mod, space: list[dict] | None = None, rep: float = 40) -> dict:
    """Time every config on tune and held-out shapes; pick on tune, report the loss on held-out."""
    space = space or MM_SPACE
    shapes = TUNE_SHAPES + HOLDOUT_SHAPES
    table: dict[str, dict[str, float | None]] = {}
    errors: dict[str, str] = {}
    cublas: dict[str, float] = {}
    dt = torch.bfloat16
    inputs = {}
    for m, n, k in shapes:
        inputs[(m, n, k)] = (
            torch.randn(m, k, device=dev()).to(dt),
            (torch.randn(k, n, device=dev()) / k**0.5).to(dt),
        )
    for m, n, k in shapes:
        a, b = inputs[(m, n, k)]
        t = timed(lambda a=a, b=b: torch.matmul(a, b), rep=rep)
        cublas[f"{m}x{n}x{k}"] = bench.tflops(2 * m * n * k, t["ms"]) if "ms" in t else None
    for c in space:
        name = cfg_name(c)
        table[name] = {}
        for m, n, k in shapes:
            a, b = inputs[(m, n, k)]
            key = f"{m}x{n}x{k}"
            try:
                c_out = mod.matmul(a, b, config=c)
                if key in ("4096x4096x4096", "1024x8192x8192"):
                    ref = a.float() @ b.float()
                    err = float((c_out.float() - ref).norm() / ref.norm())
                    if not err < 1e-2:
                        raise RuntimeError(f"wrong result, rel_err={err:.2e}")
            except Exception as exc:
                errors[name] = f"{type(exc).__name__}: {str(exc)[:300]}"
                table[name] = {f"{m}x{n}x{k}": None for m, n, k in shapes}
                break
            t = timed(lambda a=a, b=b, c=c: mod.matmul(a, b, config=c), rep=rep)
            table[name][key] = bench.tflops(2 * m * n * k, t["ms"]) if "ms" in t else None
        log(f"autotune {name}: " + " ".join(f"{v:.0f}" if v else "-" for v in table[name].values()))
    del inputs
    empty_cache(torch)
    tune_keys = [f"{m}x{n}x{k}" for m, n, k in TUNE_SHAPES]
    hold_keys = [f"{m}x{n}x{k}" for m, n, k in HOLDOUT_SHAPES]
    scores = {
        name: bench.geomean(row[k] or 0 for k in tune_keys)
        for name, row in table.items()
        if all(row.get(k) for k in tune_keys)
    }
    tuned = max(scores, key=scores.get) if scores else None
    report = []
    for key in tune_keys + hold_keys:
        col = {name: row.get(key) for name, row in table.items() if row.get(key)}
        if not col or tuned is None:
            continue
        best = max(col, key=col.get)
        report.append(
            {
                "shape": key,
                "set": "tune" if key in tune_keys else "holdout",
                "tuned_config": tuned,
                "tuned_tflops": col.get(tuned),
                "best_config": best,
                "best_tflops": col[best],
                "loss_pct": 100 * (1 - (col.get(tuned) or 0) / col[best]),
                "cublas_tflops": cublas.get(key),
            }
        )
    return {
        "dtype": "bf16",
        "space": [cfg_name(c) for c in space],
        "space_configs": space,
        "tune_shapes": tune_keys,
        "holdout_shapes": hold_keys,
        "tflops": table,
        "errors": errors,
        "cublas_tflops": cublas,
        "tune_scores": scores,
        "tuned_config": tuned,
        "report": report,
        "holdout_mean_loss_pct": (
            sum(r["loss_pct"] for r in report if r["set"] == "holdout")
            / max(1, sum(r["set"] == "holdout" for r in report))
        ),
    }


# ====================================================================== recorded run


def check_all(torch) -> list[dict]:
    from tritonlab.perf.kernels import cases as C
    from tritonlab.perf.kernels.selfcheck import SMALL_CASES, check

    out = []
    for name, shape, dtype, cfg in SMALL_CASES:
        r = check(name, shape, dtype, dev(), cfg)
        out.append({**r.__dict__, "ok": r.ok, "size": "small"})
    for name in C.BUILDERS:
        for case in C.cases_for(name, dev(), tiny=SMOKE):
            r = check(name, case.shape, C.DT[case.dtype], dev())
            out.append({**r.__dict__, "ok": r.ok, "size": "benchmarked"})
            empty_cache(torch)
    bad = [r for r in out if not r["ok"]]
    log(f"correctness: {len(out) - len(bad)}/{len(out)} ok" + (f"; FAILED: {bad}" if bad else ""))
    return out


def main_rows(torch, peaks) -> list[dict]:
    from tritonlab.perf.kernels import cases as C

    rows = []
    for name in C.BUILDERS:
        for case in C.cases_for(name, dev(), tiny=SMOKE):
            row = bench.measure_case(case, peaks, gpu=not SMOKE)
            rows.append(row)
            log(bench.format_rows([row]))
            empty_cache(torch)
    return rows


def size_sweeps(torch, peaks) -> dict:
    from tritonlab.perf.kernels import cases as C

    sizes = [2**p for p in range(12, sz(29, 15), 2)]
    rows = [
        bench.measure_case(c, peaks, rep=sz(50, 5), gpu=not SMOKE) for c in C.vector_add_cases(dev(), sizes)
    ]
    return {"vector_add_fp32": rows}


def evaluate_targets(rows: list[dict], peaks: dict) -> list[dict]:
    def pick(kernel, dtype=None):
        return [
            r
            for r in rows
            if r["kernel"] == kernel
            and (dtype is None or r["dtype"] == dtype)
            and "ms" in r["impls"].get("triton", {})
        ]

    def peer_pct(r, peer):
        return r["impls"].get(peer, {}).get("pct_copy")

    out: list[dict] = []
    for r in pick("vector_add"):
        out.append(
            {
                "id": "vector_add",
                "what": "vector add 2^28 fp32: ours vs torch.add",
                "target": 1.0,
                "unit": "x",
                "measured": r["speedup"].get("torch"),
                "ours_pct_copy": r["impls"]["triton"]["pct_copy"],
                "peer_pct_copy": peer_pct(r, "torch"),
            }
        )
    sm = pick("softmax")
    for r in sm:
        out.append(
            {
                "id": f"softmax-bw-{r['dtype']}-{r['shape'][1]}",
                "what": f"softmax {r['dtype']} {r['shape'][0]}x{r['shape'][1]}: % of copy bandwidth",
                "target": 90.0,
                "unit": "%",
                "measured": r["impls"]["triton"]["pct_copy"],
            }
        )
    best_peer = []
    for r in sm:
        ms = [r["impls"][p]["ms"] for p in ("torch", "torch.compile") if "ms" in r["impls"].get(p, {})]
        if ms:
            best_peer.append(min(ms) / r["impls"]["triton"]["ms"])
    if sm:
        out.append(
            {
                "id": "softmax-vs-peers",
                "what": "softmax, all 8 shapes: geo mean speed-up over the faster of "
                "torch.softmax and torch.compile",
                "target": 1.2,
                "unit": "x",
                "measured": bench.geomean(best_peer),
                "peer_pct_copy_max": max(
                    max(peer_pct(r, p) or 0 for p in ("torch", "torch.compile")) for r in sm
                ),
            }
        )
    for k in ("transpose", "copy_2d"):
        for r in pick(k):
            out.append(
                {
                    "id": f"{k}-{r['dtype']}",
                    "what": f"{k} {r['dtype']} {'x'.join(map(str, r['shape']))}: % of copy bandwidth",
                    "target": 85.0,
                    "unit": "%",
                    "measured": r["impls"]["triton"]["pct_copy"],
                }
            )
    mm = pick("matmul")
    for dt in ("bf16", "fp16"):
        sel = [r for r in mm if r["dtype"] == dt]
        if sel:
            out.append(
                {
                    "id": f"matmul-{dt}",
                    "what": f"matmul {dt}, 4 shapes: geo mean speed-up over cuBLAS",
                    "target": 1.0,
                    "unit": "x",
                    "measured": bench.geomean(r["speedup"].get("cuBLAS") for r in sel),
                    "per_shape": {"x".join(map(str, r["shape"])): r["speedup"].get("cuBLAS") for r in sel},
                }
            )
    if mm:
        out.append(
            {
                "id": "matmul-all",
                "what": "matmul bf16+fp16, 8 cases: geo mean speed-up over cuBLAS",
                "target": 1.0,
                "unit": "x",
                "measured": bench.geomean(r["speedup"].get("cuBLAS") for r in mm),
            }
        )
    for r in pick("matmul_bias_gelu"):
        out.append(
            {
                "id": "mbg-compile",
                "what": "matmul+bias+GELU 8192^3 bf16 vs torch.compile",
                "target": 1.05,
                "unit": "x",
                "measured": r["speedup"].get("torch.compile"),
                "ours_tflops": r["impls"]["triton"]["tflops"],
            }
        )
        out.append(
            {
                "id": "mbg-eager",
                "what": "matmul+bias+GELU 8192^3 bf16 vs eager",
                "target": 1.2,
                "unit": "x",
                "measured": r["speedup"].get("torch"),
                "ours_tflops": r["impls"]["triton"]["tflops"],
            }
        )
    rn = pick("rms_norm")
    if rn:
        out.append(
            {
                "id": "rms_norm",
                "what": "rms_norm, 3 shapes: geo mean speed-up over torch.compile",
                "target": 1.2,
                "unit": "x",
                "measured": bench.geomean(r["speedup"].get("torch.compile") for r in rn),
                "peer_pct_copy_max": max(peer_pct(r, "torch.compile") or 0 for r in rn),
                "ours_pct_copy_min": min(r["impls"]["triton"]["pct_copy"] for r in rn),
            }
        )
    for t in out:
        t["met"] = t["measured"] is not None and math.isfinite(t["measured"]) and t["measured"] >= t["target"]
    return out


def bottlenecks(torch, peaks) -> dict:
    from tritonlab.perf.kernels import cases as C
    from tritonlab.perf.kernels.vector_add import vector_add

    chain = bench.measure_case(C.elementwise_chain_cases(dev(), sz(2**28, 4096))[0], peaks, gpu=not SMOKE)
    n = 1024
    x, y = torch.randn(n, device=dev()), torch.randn(n, device=dev())
    tiny: dict[str, Any] = {"n": n, "bytes": 3 * n * 4, "impls": {}}
    for name, fn in (("torch", lambda: torch.add(x, y)), ("triton", lambda: vector_add(x, y))):
        t = bench.time_ms(fn, rep=sz(50, 5), gpu=not SMOKE)
        if not SMOKE:
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
        t = bench.time_ms(fn, rep=sz(200, 5), gpu=not SMOKE)
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
    t = bench.time_ms(lambda: torch.add(x, y), rep=sz(50, 5), gpu=not SMOKE)
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
        rows.append(bench.measure_case(case, peaks, gpu=not SMOKE))
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
    }


def versions_env() -> dict:
    env = bench.environment()
    return env


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
    args = ap.parse_args()
    global SMOKE, TUNE_SHAPES, HOLDOUT_SHAPES, MM_SPACE
    if args.smoke:
        SMOKE = True
        TUNE_SHAPES, HOLDOUT_SHAPES = [(64, 64, 64), (128, 64, 64)], [(64, 128, 64)]
        MM_SPACE = [MM_SPACE[3], MM_SPACE[7], MM_SPACE[-1]]
    ok, why = bench.gpu_status()
    if not ok and not SMOKE:
        print(bench.REFUSAL.format(why=why), file=sys.stderr)
        return 2
    import torch

    from tritonlab.perf.kernels import load

    torch.manual_seed(1234)
    env = versions_env()
    prefix = "smoke" if SMOKE else bench.gpu_slug(env.get("gpu", "gpu"))
    rec = Recorder(args.out, prefix, env)
    only = set(filter(None, args.only.split(",")))

    def want(s: str) -> bool:
        return not only or s in only

    log(f"env: {env}")
    if SMOKE:
        env["gpu"] = "smoke-cpu"
        peaks = {"copy_gbps": 1.0, "matmul_bf16_tflops": 1.0}
    else:
        peaks = measure_peaks()
        save_peaks(env["gpu"], peaks)
    log(f"peaks: copy {peaks['copy_gbps']:.0f} GB/s, bf16 matmul {peaks['matmul_bf16_tflops']:.0f} TFLOP/s")

    if args.explore:
        tuning: dict[str, Any] = {"peaks": peaks}
        for key, fn in (
            ("picks", lambda: explore_picks(torch, set(filter(None, args.pick.split(","))) or None)),
            ("correctness", lambda: check_all(torch)),
            ("autotune", lambda: autotune_study(torch, load("matmul"))),
            ("decode", lambda: explore_decode(torch, load("matmul"))),
            (
                "softmax",
                lambda: explore_rows(
                    torch,
                    "softmax",
                    load("softmax"),
                    [(dt, n) for dt in (torch.float32, torch.bfloat16) for n in (1024, 4096, 16384, 32768)],
                ),
            ),
            (
                "rms_norm",
                lambda: explore_rows(
                    torch,
                    "rms_norm",
                    load("rms_norm"),
                    [(torch.bfloat16, 4096), (torch.bfloat16, 8192), (torch.float32, 4096)],
                ),
            ),
            ("vector_add", lambda: explore_vector_add(torch, load("vector_add"))),
            (
                "copy_2d",
                lambda: explore_2d(
                    torch,
                    "copy_2d",
                    load("copy_2d"),
                    [
                        {"block_m": bm, "block_n": bn, "num_warps": w}
                        for bm, bn, w in (
                            (8, 512, 4),
                            (16, 256, 4),
                            (16, 256, 8),
                            (32, 256, 8),
                            (16, 512, 8),
                            (64, 64, 4),
                            (32, 128, 4),
                        )
                    ],
                ),
            ),
            (
                "transpose",
                lambda: explore_2d(
                    torch,
                    "transpose",
                    load("transpose"),
                    [
                        {"block_m": bm, "block_n": bn, "num_warps": w}
                        for bm, bn, w in (
                            (32, 32, 4),
                            (64, 64, 4),
                            (64, 64, 8),
                            (128, 64, 8),
                            (64, 128, 8),
                            (128, 128, 8),
                            (32, 128, 4),
                        )
                    ],
                ),
            ),
        ):
            if want(key):
                tuning[key] = section(fn, key)()
                rec.write("tuning", tuning)
                empty_cache(torch)
        return 0

    results: dict[str, Any] = {"peaks": peaks}
    if args.picks:
        picks = json.loads(args.picks.read_text()).get("picks", {})
        results["configs_from_explore_pass"] = apply_picks(picks)
    results["configs"] = current_configs()
    if want("correctness"):
        results["correctness"] = section(lambda: check_all(torch), "correctness")()
        rec.write("results", results)
    if want("main"):
        rows = section(lambda: main_rows(torch, peaks), "main")()
        results["rows"] = rows if isinstance(rows, list) else []
        results["targets"] = evaluate_targets(results["rows"], peaks)
        results["size_sweeps"] = section(lambda: size_sweeps(torch, peaks), "size_sweeps")()
        rec.write("results", results)
        rec.write(
            "roofline",
            {
                "peaks": peaks,
                "points": [
                    {
                        "kernel": r["kernel"],
                        "dtype": r["dtype"],
                        "shape": r["shape"],
                        "bytes": r["bytes"],
                        "flops": r["flops"],
                        "intensity": bench.intensity(r["flops"], r["bytes"]) if r["flops"] else None,
                        "impls": {
                            k: {kk: v.get(kk) for kk in ("ms", "gbps", "tflops", "pct_copy", "pct_matmul")}
                            for k, v in r["impls"].items()
                            if "ms" in v
                        },
                    }
                    for r in results["rows"]
                ],
            },
        )
    if want("bottlenecks"):
        rec.write("bottlenecks", section(lambda: bottlenecks(torch, peaks), "bottlenecks")())
    if want("block_sweep"):
        rec.write("block-sweep", section(lambda: block_sweep(torch), "block_sweep")())
    if want("fusion"):
        rec.write("fusion", section(lambda: fusion(torch, peaks), "fusion")())
    if want("autotune"):
        rec.write("autotune-holdout", section(lambda: autotune_study(torch, load("matmul")), "autotune")())
    if results.get("targets"):
        print("\n== targets ==")
        for t in results["targets"]:
            meas = "n/a" if t["measured"] is None else f"{t['measured']:.3g}{t['unit']}"
            print(
                f"{'MET  ' if t['met'] else 'SHORT'} {t['id']:26s} {meas:>9s} (target {t['target']}{t['unit']})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
