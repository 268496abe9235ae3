"""The course's reference-kernel targets, restated against what the hardware allows, and judged from bench rows.

Two rules, both bounded by a physical or a shipped ceiling (no target asks to beat a peer that already runs
at the roof):

* **memory-bound** kernels: at least `MEMORY_PCT` % of this GPU's *measured* copy bandwidth
  (`peaks.copy_gbps`), on **every** benchmarked shape and dtype (one target per row);
* **compute-bound** kernels (the GEMM family and attention, `COMPUTE_KERNELS`): at least `COMPUTE_X` × the
  **fastest of every available peer** (`peers_of`: cuBLAS, torch.compile and eager torch for GEMMs; each SDPA
  backend, the default SDPA call and torch.compile for attention; every ``torch._scaled_mm`` scaling and
  torch.compile for fp8), per shape, as the geometric mean over the kernel's shapes of one dtype, the decode
  (skinny) shape included (one target per kernel and dtype). A peer that raised is listed as unavailable; a
  target whose rows lack a required peer (attention: the default SDPA call, `REQUIRED_PEERS`) is not met —
  a kernel compared with a backend the default call does not pick is not "faster than SDPA".

The figures are the median over runs of the same case set timed in interleaved order (run 1 of every case,
then run 2, ...), so drift of clocks or temperature spreads over every case; the spread (lowest to highest
run) is reported beside each median. `combine` folds the runs into one row per case; `evaluate` judges rows.
Rows are those of `perf.bench.measure_case` (`tritonlab bench --all --json`, `scripts/bench_gpu.py`).
"""

from __future__ import annotations

import functools
import statistics
import tomllib
from pathlib import Path
from typing import Any

from tritonlab.perf import bench

MEMORY_PCT = 92.0
COMPUTE_X = 1.00
COMPUTE_KERNELS = (
    "matmul",
    "matmul_bias_gelu",
    "matmul_tma",
    "matmul_fp8",
    "attention",
    "attention_backward",
)
#: The GEMM family's peers: cuBLAS (torch.matmul), torch.compile (default mode, and max-autotune where a run
#: timed it) and eager torch (the fused GEMM's unfused formula).
COMPUTE_PEERS = ("cuBLAS", "torch.compile", "torch.compile max-autotune", "torch")
#: Attention's peers (forward and backward): each SDPA backend on its own, the default call, torch.compile.
SDPA_PEERS = ("sdpa_cudnn", "sdpa_flash", "sdpa_efficient", "sdpa_default", "torch.compile")
#: The fp8 GEMM's: torch._scaled_mm with the same block scales and with coarser ones, torch.compile.
FP8_PEERS = ("scaled_mm blockwise", "scaled_mm rowwise", "scaled_mm tensorwise", "torch.compile")
#: A compute-bound kernel whose peers are not the GEMM family's.
KERNEL_PEERS = {"attention": SDPA_PEERS, "attention_backward": SDPA_PEERS, "matmul_fp8": FP8_PEERS}
#: Peers every row of a kernel must carry (timed, or recorded as unavailable) for its target to be judged met.
REQUIRED_PEERS = {"attention": ("sdpa_default",), "attention_backward": ("sdpa_default",)}


def peers_of(kernel: str) -> tuple[str, ...]:
    """Every implementation a compute-bound kernel is compared with; its target takes the fastest per shape."""
    return KERNEL_PEERS.get(kernel, COMPUTE_PEERS)


def peer_label(name: str, entry: dict[str, Any]) -> str:
    """A peer as reports name it: the default SDPA call with the backend it picked ("sdpa_default (cudnn)")."""
    backend = entry.get("backend")
    return f"{name} ({backend})" if backend else name


#: The measured causes of the targets still short, one per target id: `targets.toml` beside this module (data,
#: packaged with it), read by `tritonlab bench --json`, `make gpu-verify` and docs/benchmarks.md alike.
CAUSES_FILE = Path(__file__).with_name("targets.toml")


@functools.cache
def causes() -> dict[str, dict[str, Any]]:
    """Target id -> {"text": why it is short, "runs": the docs/gpu-runs folders the text rests on}."""
    data = tomllib.loads(CAUSES_FILE.read_text(encoding="utf-8"))
    out: dict[str, dict[str, Any]] = {}
    for key, entry in data.get("causes", {}).items():
        text, runs = entry.get("text"), entry.get("runs")
        if not isinstance(text, str) or not text.strip() or not isinstance(runs, list) or not runs:
            raise ValueError(f"{CAUSES_FILE}: [causes.{key!r}] needs a non-empty `text` and a list of `runs`")
        out[key] = {"text": " ".join(text.split()), "runs": [str(r) for r in runs]}
    return out


#: The fields of a bench row that are not the case itself: whatever else a row carries (attention's `causal`,
#: a matmul's `class`) is part of what was timed, so two rows differing there are different cases.
_MEASURED = frozenset({"kernel", "dtype", "shape", "bytes", "flops", "bound", "impls", "speedup", "runs"})


def case_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a case across runs: kernel, dtype, shape and the case's own settings (causal or not)."""
    settings = tuple(sorted((k, repr(v)) for k, v in row.items() if k not in _MEASURED))
    return row["kernel"], row["dtype"], tuple(row["shape"]), settings


def combine(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per case from several interleaved runs: each implementation's median time (and the rates that
    follow from it), `runs` (how many runs timed it) and `spread_ms` (lowest, highest); speed-ups recomputed
    from the medians. Cases keep the order of their first appearance."""
    grouped: dict[tuple, list[dict[str, Any]]] = {}
    for run in runs:
        for row in run:
            grouped.setdefault(case_key(row), []).append(row)
    out = []
    for rows in grouped.values():
        merged = {k: v for k, v in rows[0].items() if k not in ("impls", "speedup")}
        merged["runs"] = len(rows)
        impls: dict[str, Any] = {}
        for name in rows[0]["impls"]:
            timed = [r["impls"][name] for r in rows if "ms" in r["impls"].get(name, {})]
            if not timed:
                impls[name] = rows[0]["impls"][name]  # every run failed it: keep the first error
                continue
            ms = statistics.median(t["ms"] for t in timed)
            best = min(timed, key=lambda t: abs(t["ms"] - ms))
            scale = best["ms"] / ms if ms else 1.0
            entry = {
                k: (v * scale if k in ("gbps", "tflops", "pct_copy", "pct_matmul") else v)
                for k, v in best.items()
            }
            entry["ms"] = ms
            entry["spread_ms"] = [min(t["ms"] for t in timed), max(t["ms"] for t in timed)]
            impls[name] = entry
        merged["impls"] = impls
        ours = impls.get("triton", {}).get("ms")
        merged["speedup"] = {
            n: v["ms"] / ours for n, v in impls.items() if n != "triton" and ours and "ms" in v
        }
        out.append(merged)
    return out


def _spread_pct(row: dict[str, Any], peak_gbps: float | None) -> list[float] | None:
    spread = row["impls"]["triton"].get("spread_ms")
    if not spread or not peak_gbps:
        return None
    return [round(100 * bench.gbps(row["bytes"], ms) / peak_gbps, 1) for ms in (spread[1], spread[0])]


def evaluate(rows: list[dict[str, Any]], peaks: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every target the rows can judge: id, what, target, unit, measured, met (and spread, runs, per_shape); a
    short one whose cause was measured also carries `cause` and `cause_runs` (the recorded runs it rests on)."""
    timed = [r for r in rows if "ms" in r.get("impls", {}).get("triton", {})]
    peak_gbps = (peaks or {}).get("copy_gbps")
    out: list[dict[str, Any]] = []
    for r in timed:
        if r["kernel"] in COMPUTE_KERNELS or r.get("bound") != "memory":
            continue
        pct = r["impls"]["triton"].get("pct_copy")
        out.append(
            {
                "id": f"{r['kernel']}-{r['dtype']}-{bench.shape_label(r)}",
                "rule": "memory",
                "what": f"{r['kernel']} {r['dtype']} {bench.shape_label(r)}: % of measured copy bandwidth",
                "target": MEMORY_PCT,
                "unit": "%",
                "measured": pct,
                "spread": _spread_pct(r, peak_gbps),
                "runs": r.get("runs", 1),
            }
        )
    for kernel in COMPUTE_KERNELS:
        for dtype in sorted({r["dtype"] for r in timed if r["kernel"] == kernel}):
            sel = [r for r in timed if r["kernel"] == kernel and r["dtype"] == dtype]
            target = _compute_target(kernel, dtype, sel)
            if target is not None:
                out.append(target)
    for t in out:
        m = t["measured"]
        t["met"] = m is not None and m == m and m >= t["target"] and not t.get("incomplete")
        cause = causes().get(t["id"])
        if not t["met"] and cause:
            t["cause"] = cause["text"]
            t["cause_runs"] = [f"docs/gpu-runs/{run}" for run in cause["runs"]]
    return out


def _compute_target(kernel: str, dtype: str, sel: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One compute-bound target: per shape, our time against the fastest peer timed in that row."""
    names = peers_of(kernel)
    per_shape: dict[str, float] = {}
    fastest: dict[str, str] = {}
    timed_peers: set[str] = set()
    unavailable: dict[str, str] = {}
    incomplete: list[str] = []
    lows: list[float] = []
    highs: list[float] = []
    for r in sel:
        label = bench.shape_label(r)
        impls = r["impls"]
        for p in names:
            if "error" in impls.get(p, {}) and "ms" not in impls[p]:
                unavailable.setdefault(p, impls[p]["error"])
        incomplete += [f"{label}: {p} not timed" for p in REQUIRED_PEERS.get(kernel, ()) if p not in impls]
        peers = {p: impls[p] for p in names if "ms" in impls.get(p, {})}
        if not peers:
            continue
        best_name = min(peers, key=lambda p: peers[p]["ms"])
        best = peers[best_name]
        timed_peers.update(peers)
        ours = impls["triton"]
        per_shape[label] = best["ms"] / ours["ms"]
        fastest[label] = peer_label(best_name, best)
        if "spread_ms" in ours and "spread_ms" in best:  # several runs: the ratio's range
            lows.append(best["spread_ms"][0] / ours["spread_ms"][1])
            highs.append(best["spread_ms"][1] / ours["spread_ms"][0])
    if not per_shape:
        return None
    shown = [p for p in names if p in timed_peers]
    return {
        "id": f"{kernel}-{dtype}",
        "rule": "compute",
        "what": f"{kernel} {dtype}, {len(per_shape)} shape{'s' if len(per_shape) > 1 else ''}: geo mean × the "
        f"fastest of {' / '.join(shown)}",
        "peers": sorted(timed_peers),
        "fastest": fastest,
        "unavailable": unavailable,
        "not_timed": [p for p in names if p not in timed_peers and p not in unavailable],
        "incomplete": incomplete,
        "target": COMPUTE_X,
        "unit": "x",
        "measured": bench.geomean(per_shape.values()),
        "per_shape": per_shape,
        "spread": [round(bench.geomean(lows), 3), round(bench.geomean(highs), 3)]
        if len(lows) == len(per_shape)
        else None,
        "runs": min(r.get("runs", 1) for r in sel),
    }
