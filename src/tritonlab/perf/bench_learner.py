"""`tritonlab bench EXERCISE [--file F]`: time the LEARNER's kernel with the course's protocol.

The learner's file runs only in a sandboxed child (mode "bench" of harness.py): the child times the learner's
function on the reference kernel's benchmark cases (same shapes, fresh inputs, counted bytes and FLOPs) next to
the course's reference kernel and torch, after checking that the learner's result agrees with the reference on
those very inputs (a fast wrong kernel is not a result). The parent only reads the rows back.
"""

from __future__ import annotations

import json
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
    for case in C.cases_for(kernel, "cuda" if gpu else "cpu", tiny=not gpu):
        try:
            time_one(case, adapt(fn), learner_file, job.get("peaks"), gpu, out)
        except BaseException as exc:  # noqa: BLE001 - one broken case must not hide the others
            info = harness.describe_exception(exc, learner_file)
            out["problems"].append(f"{case.label}: {info['type']}: {info['message']}")
        (run_dir / "bench.json").write_text(json.dumps(out, default=str))
    (run_dir / "bench.json").write_text(json.dumps(out, default=str))
    return 0


def time_one(
    case: Any, mine: Callable[..., Any], learner_file: str, peaks: dict | None, gpu: bool, out: dict
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
    row = bench.measure_case(case, peaks, gpu=gpu)
    row["impls"] = {LEARNER if k == "triton" else k: v for k, v in row["impls"].items()}
    out["rows"].append(row)


def run(service: Any, exercise: Any, file: Path, peaks: dict | None, timeout: float = 600.0) -> dict:
    """In the parent: run the bench job in the sandbox (queued like every run) and return its rows."""
    job = {
        "mode": "bench",
        "exercise": exercise.id,
        "function": exercise.function,
        "file": str(Path(file).resolve()),
        "gpu": service.backend == "gpu",
        "peaks": peaks,
    }
    result, data = service.run_job(job, "bench.json", timeout=timeout)
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
