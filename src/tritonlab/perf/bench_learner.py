"""`tritonlab bench EXERCISE [--file F]`: time the LEARNER's kernel with the course's protocol.

The learner's file runs only in a sandboxed child (mode "bench" of harness.py): the child times the learner's
function on the reference kernel's benchmark cases (same shapes, fresh inputs, counted bytes and FLOPs) next to
the course's reference kernel and torch, after checking that the learner's result agrees with the reference on
those very inputs (a fast wrong kernel is not a result). The parent only reads the rows back.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

# exercise id -> (reference kernel whose bench cases are used, adapter: learner fn -> fn(*case args))
EXERCISE_KERNELS: dict[str, tuple[str, Callable[[Callable[..., Any]], Callable[..., Any]]]] = {
    "vector-add": ("vector_add", lambda fn: fn),
    "copy-2d": ("copy_2d", lambda fn: fn),
    "transpose": ("transpose", lambda fn: fn),
    "softmax": ("softmax", lambda fn: fn),
    "matmul": ("matmul", lambda fn: fn),
    "autotune": ("matmul", lambda fn: fn),
    "matmul-bias": ("matmul_bias_gelu", lambda fn: lambda a, b, bias: fn(a, b, bias, activation="gelu")),
    "debug-rmsnorm": ("rms_norm", lambda fn: lambda x, w: fn(x, w)),
}
LEARNER = "your kernel"  # bench.measure_case names "ours" `triton`; rows are relabelled for the learner
REFERENCE = "course reference"


def agrees(mine: Any, ref: Any) -> tuple[bool, str]:
    """Loose agreement with the reference kernel (fp32 compare; the real grading is `tritonlab check`)."""
    import torch

    if not isinstance(mine, torch.Tensor):
        return False, f"returned {type(mine).__name__}, not a tensor"
    if mine.shape != ref.shape or mine.dtype != ref.dtype:
        return False, f"returned {tuple(mine.shape)} {mine.dtype}, expected {tuple(ref.shape)} {ref.dtype}"
    a, b = mine.float(), ref.float()
    tol = 1e-2 if ref.dtype in (torch.float16, torch.bfloat16) else 2e-3
    if not torch.allclose(a, b, rtol=tol, atol=tol * float(b.abs().max().clamp(min=1e-6))):
        worst = float((a - b).abs().max())
        return False, f"differs from the reference kernel (max abs difference {worst:.3g})"
    return True, ""


def child_main(job: dict, run_dir: Path) -> int:
    """In the sandboxed child: time the learner's function on every bench case of its exercise."""
    from tritonlab.grading import harness
    from tritonlab.perf.kernels import cases as C

    learner_file = os.path.realpath(job["file"])
    out: dict[str, Any] = {"rows": [], "problems": []}
    try:
        module = harness.load_learner(learner_file)
        fn = getattr(module, job["function"])
    except BaseException as exc:  # noqa: BLE001 - the learner's error is data
        out["import_error"] = harness.describe_exception(exc, learner_file)
        (run_dir / "bench.json").write_text(json.dumps(out))
        return 0
    kernel, adapt = EXERCISE_KERNELS[job["exercise"]]
    gpu = job["gpu"]
    peaks = job.get("peaks") or peaks_of_this_gpu(job.get("peaks_by_gpu"), gpu)
    cases = C.cases_for(kernel, "cuda" if gpu else "cpu", tiny=not gpu)
    for case in cases:
        try:
            time_one(case, adapt(fn), learner_file, peaks, gpu, out)
        except BaseException as exc:  # noqa: BLE001 - one broken case must not hide the others
            info = harness.describe_exception(exc, learner_file)
            out["problems"].append(f"{case.label}: {info['type']}: {info['message']}")
        (run_dir / "bench.json").write_text(json.dumps(out, default=str))
    (run_dir / "bench.json").write_text(json.dumps(out, default=str))
    return 0


def peaks_of_this_gpu(by_gpu: dict | None, gpu: bool) -> dict | None:
    """This GPU's measured ceilings from the parent's cache (the child never measures them itself)."""
    if not gpu or not isinstance(by_gpu, dict):
        return None
    import torch

    name = torch.cuda.get_device_name()
    entry = by_gpu.get(name)
    return {**entry, "gpu": name} if isinstance(entry, dict) and "copy_gbps" in entry else None


def time_one(
    case: Any,
    mine: Callable[..., Any],
    learner_file: str,
    peaks: dict | None,
    gpu: bool,
    out: dict,
) -> None:
    """Check the learner's result on this case's inputs, then time it next to the reference and torch."""
    from tritonlab.grading import harness
    from tritonlab.perf import bench

    args = case.make()
    try:
        ok, why = agrees(mine(*args), case.ours(*args))
    except BaseException as exc:  # noqa: BLE001
        info = harness.describe_exception(exc, learner_file)
        ok, why = False, f"raised {info['type']}: {info['message']} ({info.get('where') or 'your file'})"
    if not ok:
        out["problems"].append(f"{case.label}: your kernel {why}; not timed — run `tritonlab check` first")
        return
    case.peers = {REFERENCE: case.ours, **case.peers}
    case.ours = mine
    out["rows"].append(learner_row(bench.measure_case(case, peaks, gpu=gpu), peaks))


def learner_row(row: dict, peaks: dict | None) -> dict:
    """A row of `bench.measure_case` whose `triton` entry timed the learner's function, as a learner bench
    reports it: that entry renamed LEARNER (its speed-ups keep their meaning: LEARNER is `ours`)."""
    row["peaks"] = peaks
    row["impls"] = {LEARNER if k == "triton" else k: v for k, v in row["impls"].items()}
    return row


def run(service: Any, exercise: Any, file: Path, peaks: dict | None, timeout: float = 600.0) -> dict:
    """In the parent: run the bench job in the sandbox (queued like every run, alone on a GPU while it times)
    and return its rows."""
    job = {
        "mode": "bench",
        "exercise": exercise.id,
        "function": exercise.function,
        "file": str(Path(file).resolve()),
        "gpu": service.backend == "gpu",
        "peaks": peaks,
    }
    result, data = service.run_job(job, "bench.json", timeout=timeout)  # a timing mode: the GPU alone
    if data is None:
        why = "timed out" if result.timed_out else f"exit {result.exit_code}, signal {result.signal}"
        data = {
            "rows": [],
            "problems": [f"the benchmark run ended without a result ({why})"],
            "output": result.output[-2000:],
        }
    elif data.get("type") == "MalformedResult" or not isinstance(data.get("rows", []), list):
        why = data.get("message") if data.get("type") == "MalformedResult" else "rows is not a list"
        data = {"rows": [], "problems": [str(why)], "output": result.output[-2000:]}
    return data


# ---- the speed line of a passing GPU check ------------------------------------------------------------------

NO_SPEED_INTERPRETER = "the interpreter runs kernels on the CPU: no speed is measured (check on a GPU)"
NO_SPEED_CASE = "this exercise has no speed case"


def speed_summary(data: dict, goal: float | None = None) -> dict:
    """The `"speed"` object of a verdict from the one row of a speed job (or the reason there is none)."""
    rows = data.get("rows") or []
    if not rows:
        problems = data.get("problems") or ["the timing run gave no result"]
        return {"error": "; ".join(str(p) for p in problems)[:300]}
    row = rows[0]
    mine = row["impls"].get(LEARNER, {})
    if "ms" not in mine:
        return {"error": str(mine.get("error", "your kernel was not timed"))[:300]}
    compute = row.get("bound") == "compute"
    peaks = row.get("peaks") or {}
    roof = peaks.get("matmul_bf16_tflops" if compute else "copy_gbps")
    achieved = mine["tflops"] if compute else mine["gbps"]
    summary = {
        "case": f"{row['kernel']} {row['dtype']} {'x'.join(str(d) for d in row['shape'])}",
        "unit": "TFLOP/s" if compute else "GB/s",
        "achieved": _significant(achieved),
        "ms": _significant(mine["ms"]),
        "roof": round(float(roof), 3) if roof else None,
        "pct_of_roof": round(100 * achieved / float(roof), 1) if roof else None,
        "vs_reference": None,
        "goal_vs_reference": goal,
        "gpu": peaks.get("gpu"),
    }
    if not roof:
        summary["note"] = "no measured roof for this GPU yet: `tritonlab bench --all` measures it once"
    speedup = row.get("speedup", {}).get(REFERENCE)
    if speedup:
        summary["vs_reference"] = round(float(speedup), 3)
    plot = roofline_points(row, peaks)
    if plot:
        summary["plot"] = plot
    return summary


def _significant(value: float, digits: int = 6) -> float:
    """`value` to `digits` significant figures: a fixed number of decimals turns a slow run's 0.0004 GB/s
    (the interpreter, a tiny case) into 0.0, which reads as "did no work"."""
    return float(f"{float(value):.{digits}g}")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def roofline_points(row: dict, peaks: dict) -> dict | None:
    """What the web page's small roofline plot draws: this GPU's two measured roofs, and the learner's and the
    course reference's points at the case's arithmetic intensity (FLOP per byte moved; 0 for a kernel that
    only moves data, drawn against the bandwidth roof alone). None without a measured roof."""
    copy_gbps, peak_tflops = _number(peaks.get("copy_gbps")), _number(peaks.get("matmul_bf16_tflops"))
    if not copy_gbps:
        return None
    points = {}
    for who, name in (("learner", LEARNER), ("reference", REFERENCE)):
        impl = row.get("impls", {}).get(name) or {}
        gbps, flops = _number(impl.get("gbps")), _number(impl.get("tflops"))
        if gbps:
            points[who] = {"gbps": _significant(gbps), "tflops": _significant(flops or 0.0)}
    if "learner" not in points:
        return None
    mine = points["learner"]
    intensity = 1000 * mine["tflops"] / mine["gbps"]  # (TFLOP/s) / (GB/s) = 1000 FLOP/B
    return {
        "intensity": round(intensity, 4),
        "copy_gbps": round(copy_gbps, 3),
        "peak_tflops": round(peak_tflops, 3) if peak_tflops else None,
        **points,
    }


def speed_line(speed: dict | None) -> str:
    """One line for people: `speed: 3050 GB/s (84% of the measured roof), 0.97× the course reference`."""
    if not speed:
        return ""
    if "error" in speed:
        return f"speed: not measured ({speed['error']})"
    parts = [f"speed on {speed['case']}: {speed['achieved']:.4g} {speed['unit']}"]
    if speed.get("pct_of_roof") is not None:
        parts[0] += f" ({speed['pct_of_roof']:.0f}% of the measured roof)"
    if speed.get("vs_reference"):
        parts.append(f"{speed['vs_reference']:.2f}× the course reference")
    if speed.get("goal_vs_reference"):
        met = (speed.get("vs_reference") or 0) >= speed["goal_vs_reference"]
        parts.append(f"goal {speed['goal_vs_reference']:.2f}× {'met' if met else 'not met yet'} (not graded)")
    return ", ".join(parts)


def speed_job(exercise: Any, file: Path, peaks_by_gpu: dict | None) -> dict | None:
    """The sandboxed job that times a passing file on its exercise's representative size (None: no case)."""
    if exercise.id not in EXERCISE_KERNELS:
        return None
    return {
        "mode": "speed_record",  # perf/speed.py: one recorded call; the timing is done by a trusted child
        "exercise": exercise.id,
        "function": exercise.function,
        "file": str(Path(file).resolve()),
        "gpu": True,
        "peaks_by_gpu": peaks_by_gpu or {},
    }
