"""PARENT side of `tritonlab profile`: the job, the validation of the child's `profile.json` (hostile: the
child imported the learner's file, which could write anything there), the rates against this GPU's measured
roofs, the static view when there is no GPU, and the text report the CLI, the web page and `%profile` show.

The rates are computed here, from validated times and the bytes and FLOPs the child counted for the course's
own inputs; the roofs are this machine's measurements (perf/peaks.py's cache), never the child's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tritonlab.grading.kernel_inspect import FEATURE_LABELS
from tritonlab.profiling.child import MAX_CASES, RESULT

__all__ = ["RESULT", "checked", "format_report", "job", "no_gpu", "with_rates"]

MAX_KERNELS = 16
MAX_METRICS = 16
NO_ROOF = "no measured roof for this GPU yet: `tritonlab bench --all` measures it once"


def job(exercise_id: str, function: str, file: Path, peaks_by_gpu: dict) -> dict:
    return {
        "mode": "profile",
        "exercise": exercise_id,
        "function": function,
        "file": str(Path(file).resolve()),
        "peaks_by_gpu": peaks_by_gpu,
    }


def _text(value: Any, most: int = 300) -> str:
    return value[:most] if isinstance(value, str) else ""


def _number(value: Any, high: float = 1e30) -> float | None:
    """A finite, non-negative number (bools are not numbers here), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) and 0 <= value <= high else None


def _kernel(k: Any) -> dict | None:
    if not isinstance(k, dict):
        return None
    calls, time_ns = _number(k.get("calls"), 1e9), _number(k.get("time_ns"))
    if calls is None or time_ns is None:
        return None
    metrics = k.get("metrics") if isinstance(k.get("metrics"), dict) else {}
    kept = {
        _text(n, 64): _number(v) for n, v in list(metrics.items())[:MAX_METRICS] if _number(v) is not None
    }
    return {
        "name": _text(k.get("name"), 200) or "?",
        "calls": int(calls),
        "time_ns": time_ns,
        "metrics": kept,
    }


def _case(c: Any) -> dict | None:
    if not isinstance(c, dict):
        return None
    kernels = c.get("kernels") if isinstance(c.get("kernels"), list) else []
    problems = c.get("problems") if isinstance(c.get("problems"), list) else []
    return {
        "label": _text(c.get("label"), 200) or "case",
        "bytes": _number(c.get("bytes")) or 0.0,
        "flops": _number(c.get("flops")) or 0.0,
        "bound": c.get("bound") if c.get("bound") in ("memory", "compute") else "",
        "reps": int(_number(c.get("reps"), 1e6) or 0),
        "event_ms": _number(c.get("event_ms"), 1e9),
        "kernels": [k for k in (_kernel(k) for k in kernels[:MAX_KERNELS]) if k is not None],
        "problems": [_text(p) for p in problems[:10] if isinstance(p, str)],
    }


def checked(data: Any) -> dict:
    """The child's profile with expected keys and types only, sizes capped; anything else dropped."""
    data = data if isinstance(data, dict) else {}
    out: dict[str, Any] = {"gpu": True, "device": _text(data.get("gpu"), 100), "cases": [], "problems": []}
    err = data.get("import_error")
    if isinstance(err, dict):
        out["import_error"] = {f: _text(err.get(f), 2000) for f in ("type", "message", "where", "source")}
    cases = data.get("cases") if isinstance(data.get("cases"), list) else []
    out["cases"] = [c for c in (_case(c) for c in cases[:MAX_CASES]) if c is not None]
    problems = data.get("problems") if isinstance(data.get("problems"), list) else []
    out["problems"] = [_text(p) for p in problems[:10] if isinstance(p, str)]
    return out


def with_rates(profile: dict, peaks_by_gpu: dict) -> dict:
    """Each case's time per call (Proton's kernel times summed over its launches, else the CUDA events),
    achieved GB/s and TFLOP/s, and the percentage of this GPU's measured roof for the bound that applies."""
    peaks = peaks_by_gpu.get(profile.get("device", "")) if isinstance(peaks_by_gpu, dict) else None
    peaks = peaks if isinstance(peaks, dict) else {}
    copy, matmul = _number(peaks.get("copy_gbps")), _number(peaks.get("matmul_bf16_tflops"))
    profile["roofs"] = {"copy_gbps": copy, "matmul_bf16_tflops": matmul}
    if not (copy and matmul):
        profile["problems"] = [*profile["problems"], NO_ROOF]
    for case in profile["cases"]:
        reps = max(case["reps"], 1)
        kernel_ns = sum(k["time_ns"] for k in case["kernels"])
        ms = kernel_ns / reps / 1e6 if kernel_ns else case["event_ms"]
        case["ms"] = ms
        case["source"] = "proton" if kernel_ns else "cuda events"
        for k in case["kernels"]:
            k["ms_per_call"] = k["time_ns"] / max(k["calls"], 1) / 1e6
            k["share"] = k["time_ns"] / kernel_ns if kernel_ns else 0.0
        if not ms:
            continue
        case["gbps"] = case["bytes"] / (ms * 1e-3) / 1e9
        case["tflops"] = case["flops"] / (ms * 1e-3) / 1e12
        bound = case["bound"]
        if not bound and copy and matmul and case["bytes"]:
            ridge = matmul * 1e12 / (copy * 1e9)  # FLOP per byte where the two roofs meet
            bound = "compute" if case["flops"] / case["bytes"] > ridge else "memory"
            case["bound"] = bound
        if bound == "compute" and matmul:
            case["pct_of_roof"] = 100 * case["tflops"] / matmul
        elif bound == "memory" and copy:
            case["pct_of_roof"] = 100 * case["gbps"] / copy
    return profile


def no_gpu(reason: str, static: dict) -> dict:
    """What `profile` shows without a GPU: why nothing was timed, and what inspect tells statically."""
    return {"gpu": False, "reason": reason, "static": static}


def _static_lines(static: dict) -> list[str]:
    out = []
    if "import_error" in static:
        err = static["import_error"]
        out.append(f"your file could not be imported: {err.get('type')}: {err.get('message')}")
    for problem in static.get("problems", []):
        out.append(f"note: {problem}")
    for k in static.get("kernels", []):
        if "error" in k:
            out.append(f"  {k['kernel']}: did not compile: {k['error']}")
            continue
        r, occ = k.get("resources", {}), k.get("occupancy") or {}
        spills = r.get("spill_stores", 0) + r.get("spill_loads", 0)
        line = (
            f"  {k['kernel']}: {r.get('registers', '?')} registers per thread, {spills} B spilled, "
            f"{r.get('shared_memory', 0)} B shared memory, num_warps={k.get('num_warps')}"
        )
        if occ:
            line += (
                f"; {occ.get('programs_per_sm')} program(s) per SM ({occ.get('occupancy', 0):.0%} of the warp "
                f"slots), limited by {' and '.join(occ.get('limited_by', [])) or '?'}"
            )
        out.append(line)
        feats = {n: v for n, v in k.get("features", {}).items() if v}
        if feats:
            out.append(
                "    instructions: " + ", ".join(f"{FEATURE_LABELS.get(n, n)} ×{v}" for n, v in feats.items())
            )
    return out


def format_report(result: dict) -> str:
    """The profile (or the static view) as plain text."""
    static = result.get("static") or {}
    if not result.get("gpu"):
        lines = [
            f"No GPU here ({result.get('reason') or 'none visible'}): nothing was timed.",
            f"What the compiler tells without one, compiled for {static.get('target', 'cuda:90')}"
            + (f" on the case {static['case']}" if static.get("case") else "")
            + ":",
        ]
        return "\n".join(lines + _static_lines(static))
    lines = [f"GPU: {result.get('device') or '?'}"]
    roofs = result.get("roofs") or {}
    if roofs.get("copy_gbps") and roofs.get("matmul_bf16_tflops"):
        lines.append(
            f"measured roofs: copy {roofs['copy_gbps']:.0f} GB/s, bf16 matmul {roofs['matmul_bf16_tflops']:.0f} "
            "TFLOP/s"
        )
    if "import_error" in result:
        err = result["import_error"]
        lines.append(f"your file could not be imported: {err.get('type')}: {err.get('message')}")
    for case in result.get("cases", []):
        lines.append("")
        head = f"== {case['label']} =="
        lines.append(head)
        if case.get("ms"):
            rate = (
                f"{case['tflops']:.1f} TFLOP/s"
                if case.get("bound") == "compute"
                else f"{case['gbps']:.0f} GB/s"
            )
            pct = (
                f" = {case['pct_of_roof']:.0f} % of the {case['bound']} roof" if "pct_of_roof" in case else ""
            )
            lines.append(
                f"{case['ms'] * 1e3:.1f} µs per call ({case['source']}, {case['reps']} calls): {rate}{pct} "
                f"({case['bytes'] / 1e6:.1f} MB, {case['flops'] / 1e9:.2f} GFLOP counted)"
            )
        for k in case.get("kernels", []):
            lines.append(
                f"  kernel {k['name']}: {k['calls']} launch(es), {k['ms_per_call'] * 1e3:.1f} µs each, "
                f"{k['share']:.0%} of the time"
                + ("".join(f"; {n} = {v:.4g}" for n, v in k["metrics"].items()))
            )
        for problem in case.get("problems", []):
            lines.append(f"  note: {problem}")
    for problem in result.get("problems", []):
        lines.append(f"note: {problem}")
    if static:
        lines.append("")
        lines.append(f"static view (compiled for {static.get('target', 'cuda:90')}):")
        lines.extend(_static_lines(static))
    return "\n".join(lines)
