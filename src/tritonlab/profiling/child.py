"""CHILD side of `tritonlab profile` (job mode `profile`): time the learner's function under Proton.

Runs in a sandboxed child on a GPU. Inputs: the benchmark cases of the course's reference kernel for the
exercise (perf/kernels/cases.py, real sizes, counted bytes and FLOPs), or else the largest case of the
exercise's contract on the GPU backend (bytes = its tensors, FLOPs from the contract's `flops(case)` if it
has one). Each case: a few warm-up calls, then REPS calls inside a Proton session with the `triton` hook
(kernel names), whose tree (`.hatchet`, JSON) gives each kernel's time and launch count, and CUDA events
around the same calls as a cross-check. When Proton cannot start (no CUPTI in this build, say), the events
alone are reported and the reason is kept.

Writes `profile.json`: {"gpu", "cases": [{"label", "bytes", "flops", "bound", "reps", "event_ms",
"kernels": [{"name", "calls", "time_ns", "metrics"}], "problems"}], "problems", "import_error"}. A
process that ran learner code wrote it: the parent validates all of it (report.checked).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RESULT = "profile.json"
WARMUP = 3
REPS = 10
MAX_CASES = 3


def _bench_cases(exercise: str) -> list[dict] | None:
    """The reference kernel's bench cases for this exercise (perf.bench_learner's map), or None."""
    from tritonlab.perf import bench_learner
    from tritonlab.perf.kernels import cases as C

    if exercise not in bench_learner.EXERCISE_KERNELS:
        return None
    kernel, adapt = bench_learner.EXERCISE_KERNELS[exercise]
    every = C.cases_for(kernel, "cuda")
    step = max(1, len(every) // MAX_CASES)
    return [
        {
            "label": c.label,
            "make": c.make,
            "adapt": adapt,
            "reference": c.ours,
            "bytes": int(c.nbytes),
            "flops": int(c.nflops),
            "bound": c.bound,
        }
        for c in every[::step][:MAX_CASES]
    ]


def _contract_case(job: dict, run_dir: Path) -> list[dict]:
    """The largest case of the exercise's contract on the GPU backend, built on the device."""
    import numpy as np

    from tritonlab.grading import contracts, harness
    from tritonlab.grading.check.job import encode_arg
    from tritonlab.grading.check.read import ITEMSIZE
    from tritonlab.grading.contracts import Tensor, any_tensor_numel

    contract = contracts.get(job["exercise"])
    cases = [c for c in contract.cases(np.random.default_rng(0), "gpu") if not c.expect_error]
    case = max(cases, key=any_tensor_numel)
    names = getattr(contract, "ARG_NAMES", None) or [str(j) for j in range(len(case.args))]
    specs = [
        encode_arg(a, 0, names[j] if j < len(names) else str(j), run_dir) for j, a in enumerate(case.args)
    ]
    kwspecs = {k: encode_arg(v, 0, k, run_dir) for k, v in case.kwargs.items()}
    tools = harness.Tools("cuda", run_dir, 0)
    nbytes = sum(
        a.values.size * ITEMSIZE.get(a.dtype, 4)
        for a in [*case.args, *case.kwargs.values()]
        if isinstance(a, Tensor)
    )
    flops = int(contract.flops(case)) if hasattr(contract, "flops") else 0

    def make() -> tuple:
        return tuple(tools.build_arg(s) for s in specs)

    return [
        {
            "label": case.name,
            "make": make,
            "kwargs": lambda: {k: tools.build_arg(v) for k, v in kwspecs.items()},
            "adapt": lambda fn: fn,
            "reference": None,
            "bytes": int(nbytes),
            "flops": flops,
            "bound": "",
        }
    ]


def hatchet_kernels(tree: Any) -> list[dict]:
    """Kernel frames of a Proton tree (`.hatchet` JSON): name, launches, summed time, other numeric metrics.
    A frame with a `time (ns)` metric is a kernel; frames of one name are added together."""
    found: dict[str, dict] = {}
    roots = tree[:1] if isinstance(tree, list) else [tree]
    stack = [r for r in roots if isinstance(r, dict)]
    seen = 0
    while stack and seen < 100_000:
        node = stack.pop()
        seen += 1
        metrics = node.get("metrics") if isinstance(node.get("metrics"), dict) else {}
        frame = node.get("frame") if isinstance(node.get("frame"), dict) else {}
        name = str(frame.get("name", "?"))
        if "time (ns)" in metrics and not node.get("children"):
            entry = found.setdefault(name, {"name": name, "calls": 0, "time_ns": 0.0, "metrics": {}})
            entry["calls"] += int(metrics.get("count", 0) or 0)
            entry["time_ns"] += float(metrics["time (ns)"] or 0)
            for key, value in metrics.items():
                if key not in ("time (ns)", "count") and isinstance(value, int | float):
                    entry["metrics"][str(key)] = entry["metrics"].get(str(key), 0) + value
        children = node.get("children")
        if isinstance(children, list):
            stack.extend(c for c in children if isinstance(c, dict))
    return sorted(found.values(), key=lambda k: -k["time_ns"])


def _profile_case(case: dict, fn: Any, run_dir: Path, index: int) -> dict:
    import torch

    from tritonlab.perf import bench_learner

    out: dict[str, Any] = {k: case[k] for k in ("label", "bytes", "flops", "bound")} | {"problems": []}
    args = case["make"]()
    kwargs = case["kwargs"]() if "kwargs" in case else {}
    call = case["adapt"](fn)
    result = call(*args, **kwargs)
    if case["reference"] is not None:
        ok, why = bench_learner.agrees(result, case["reference"](*args))
        if not ok:
            out["problems"].append(f"your kernel {why}: run `tritonlab check` first")
    for _ in range(WARMUP):
        call(*args, **kwargs)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    name = str(run_dir / f"proton_{index}")
    proton = None
    try:
        import triton.profiler as proton

        proton.start(name, hook="triton")
    except Exception as exc:  # noqa: BLE001 - no CUPTI here, say: events only, with the reason
        out["problems"].append(f"Proton could not start ({type(exc).__name__}: {exc}); CUDA events only")
        proton = None
    start.record()
    for _ in range(REPS):
        call(*args, **kwargs)
    end.record()
    torch.cuda.synchronize()
    out["reps"] = REPS
    out["event_ms"] = start.elapsed_time(end) / REPS
    out["kernels"] = []
    if proton is not None:
        try:
            proton.finalize()
            tree = json.loads(Path(name + ".hatchet").read_text())
            out["kernels"] = hatchet_kernels(tree)
            if len(tree) > 1 and isinstance(tree[1], dict):
                out["device"] = tree[1]
        except Exception as exc:  # noqa: BLE001
            out["problems"].append(f"Proton's profile could not be read ({type(exc).__name__}: {exc})")
    return out


def run_profile(job: dict, run_dir: Path) -> int:
    """Child entry (mode `profile`)."""
    import torch

    from tritonlab.grading import harness

    out: dict[str, Any] = {"cases": [], "problems": []}
    result = run_dir / RESULT

    def flush() -> None:
        result.write_text(json.dumps(out, default=str))

    learner_file = os.path.realpath(job["file"])
    try:
        module = harness.load_learner(learner_file)
        fn = getattr(module, job["function"])
    except BaseException as exc:  # noqa: BLE001 - the learner's error is data
        out["import_error"] = harness.describe_exception(exc, learner_file)
        flush()
        return 0
    out["gpu"] = torch.cuda.get_device_name()
    try:
        cases = _bench_cases(job["exercise"]) or _contract_case(job, run_dir)
    except Exception as exc:  # noqa: BLE001
        out["problems"].append(f"no inputs to profile with ({type(exc).__name__}: {exc})")
        cases = []
    for i, case in enumerate(cases):
        try:
            out["cases"].append(_profile_case(case, fn, run_dir, i))
        except BaseException as exc:  # noqa: BLE001 - one broken case must not hide the others
            info = harness.describe_exception(exc, learner_file)
            out["problems"].append(f"{case['label']}: {info['type']}: {info['message']}")
        flush()
    flush()
    return 0
