"""A first check's kernel variants, predicted from the reference solution (child side, trusted: the precompile's
`job["predict"]`, grading/replay/precompile.py).

A learner's next check of an exercise precompiles the variants their previous replay launched
(grading/check/precompile.py). A first check has none, so the check child compiled every kernel in the learner's
cache and the replay compiled each one again in its own. The exercise's starter fixes the kernels' names and
parameters and usually their block sizes, so the reference solution, called on this very check's inputs, launches
what a learner's working file launches: each kernel with the same argument types, the same integer
specializations and the same constexprs. So the precompile child imports the solution (a copy the parent put in
its run directory: runs never see the course's solutions), calls it on the check's cases with every launch
recorded instead of run (tensors made as the check child makes them, `harness.Tools`, so each pointer's
16-byte alignment is the same), and compiles those variants from the *learner's* text. For a GPU check the
tensors are the GPU's own, as the check child's are: a course file's host code may branch on the device
(matmul's solution picks another BLOCK_K and no upcast when `a.is_cuda`), so CPU tensors predicted the
interpreter's variants, none of which a GPU check launched (H100-80GB-HBM3 run 2026-12-06 (2bb25b4): 18
predicted, and still the check child compiled 13 kernels, the replay 12); the host code's own arithmetic then
runs on the GPU too. A learner whose file launches something else (another block size, another kernel name)
wastes at most that bounded compile: the check child compiles what it launches, as before, and their next check
uses their own variants.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from tritonlab.grading.replay import variants as _variants
from tritonlab.grading.replay.replayer import LAUNCH_OPTIONS

REFERENCE = "reference.py"  # the solution's copy in the precompile's run directory
MODULE = "tritonlab_reference"


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE] = module  # a contract's run_case finds the file's other functions through it
    spec.loader.exec_module(module)
    return module


def as_variant(jit_fn: Any, args: tuple, kwargs: dict) -> dict:
    """A recorded launch (`triton_api.intercept_launches`) in the replay's variant form (variants.describe)."""
    options = {k: v for k, v in kwargs.items() if k in LAUNCH_OPTIONS}
    rest = {k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}
    return _variants.describe(jit_fn.fn.__name__, list(args), rest, options)


def _generated(spec: Any) -> bool:
    return isinstance(spec, dict) and "generated" in spec


def record_case(
    contract: Any, fn: Any, spec: dict, run_dir: Path, index: int, device: str = "cpu"
) -> tuple[list, str]:
    """Call `fn` (a trusted course file's function) on one job case, its inputs built from `run_dir` on `device`
    as the check child builds them, with every launch recorded instead of run: ([(jit_fn, args,
    kwargs)], the problem, "" when none). A refused case or a host step that needs launched results stops
    at that launch, its earlier launches kept. `benchmarks/check_compiles.py` records the same way."""
    from triton.runtime import autotuner
    from triton.runtime.jit import JITFunction

    from tritonlab.grading import triton_api
    from tritonlab.grading.harness import Tools

    recorded: list = []
    problem = ""
    run, tuned = JITFunction.run, autotuner.Autotuner.run
    triton_api.intercept_launches(recorded)
    try:
        tools = Tools(device, run_dir, index)
        if hasattr(contract, "run_case"):
            contract.run_case(fn, spec, tools)
        else:
            fn(*[tools.build_arg(a) for a in spec["args"]],
               **{k: tools.build_arg(v) for k, v in spec["kwargs"].items()})  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - a refused case, or a host step that needs launched results
        if not spec.get("expect_error"):
            problem = f"{str(spec.get('name'))[:60]}: {type(exc).__name__}: {str(exc)[:120]}"
    finally:
        JITFunction.run, autotuner.Autotuner.run = run, tuned  # a compile after this launches for real
    return recorded, problem


def predict(job: dict, run_dir: Path) -> tuple[list[dict], list[str]]:
    """(the variants the reference launches on the job's cases, problems). `job`: {"exercise", "function",
    "backend", "cases": the check's own job cases, their .npy files in `run_dir`}. A huge case (inputs
    generated on the device) is left out; a case is recorded as `record_case` says, on the GPU for a GPU check
    where this process has one (the precompile child of a GPU check does), else on CPU tensors."""
    import torch

    from tritonlab.grading import contracts

    # Where the reference's host code runs on CPU tensors: one thread. Torch's default, a thread per core, made
    # every prediction of a loaded 16-core host spin up 16 (predict_s up to 38 s there, H100-80GB-HBM3 run
    # 2026-12-06 (16a010a)); this child compiles, it has no use for them.
    torch.set_num_threads(1)
    device = "cuda" if job.get("backend") == "gpu" and torch.cuda.is_available() else "cpu"
    contract = contracts.get(str(job["exercise"]))
    fn = getattr(_load(run_dir / REFERENCE), str(job["function"]))
    found: list[dict] = []
    problems: list[str] = []
    for index, spec in enumerate(job["cases"]):
        if any(_generated(a) for a in [*spec["args"], *spec["kwargs"].values()]):
            continue
        if (spec.get("extra") or {}).get("bf16_arithmetic") and job.get("backend") != "gpu":
            continue  # the check child skips it where the interpreter cannot add bf16 (harness.py)
        recorded, problem = record_case(contract, fn, spec, run_dir, index, device)
        if problem:
            problems.append(problem)
        for jit_fn, args, kwargs in recorded:
            try:
                variant = as_variant(jit_fn, args, kwargs)
            except ValueError:
                continue
            if variant not in found:
                found.append(variant)
        if len(found) >= _variants.MAX_VARIANTS:
            break
    return found[: _variants.MAX_VARIANTS], problems[:8]
