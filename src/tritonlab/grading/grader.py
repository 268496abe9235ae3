"""PARENT side of `check`: make the cases, run the learner's function in a sandboxed child, judge.

The child returns raw outputs (.npy, no pickle) and telemetry (JSON); every verdict is computed here, from
the contract's float64 reference. Nothing the learner's file does in the child can change that.
"""

from __future__ import annotations

import json
import random
import signal as signals
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tritonlab.grading import contracts
from tritonlab.grading.contracts import DEVICE, Case, Tensor
from tritonlab.models import CaseResult, Exercise, Failure, Verdict
from tritonlab.runs import sandbox

SIGNAL_NAMES = {
    signals.SIGSEGV: "SIGSEGV",
    signals.SIGABRT: "SIGABRT",
    signals.SIGBUS: "SIGBUS",
    signals.SIGKILL: "SIGKILL",
    signals.SIGXCPU: "SIGXCPU",
    signals.SIGXFSZ: "SIGXFSZ",
    signals.SIGFPE: "SIGFPE",
    signals.SIGILL: "SIGILL",
}


def encode_arg(arg: object, case_index: int, arg_index: str, run_dir: Path) -> object:
    if isinstance(arg, Tensor):
        name = f"c{case_index}_a{arg_index}.npy"
        np.save(run_dir / name, contracts.to_storage(arg.values, arg.dtype), allow_pickle=False)
        return {"tensor": name, "dtype": arg.dtype, "layout": arg.layout, "label": f"input `{arg_index}`"}
    if arg is DEVICE:
        return {"device": True}
    return {"value": arg}


def write_job(
    exercise: Exercise,
    file: Path,
    backend: str,
    cases: list[Case],
    run_dir: Path,
    arg_names: list[str] | None = None,
) -> None:
    job_cases = []
    for i, case in enumerate(cases):
        names = arg_names or [str(j) for j in range(len(case.args))]
        args = [
            encode_arg(a, i, names[j] if j < len(names) else str(j), run_dir) for j, a in enumerate(case.args)
        ]
        kwargs = {k: encode_arg(v, i, k, run_dir) for k, v in case.kwargs.items()}
        job_cases.append(
            {
                "name": case.name,
                "args": args,
                "kwargs": kwargs,
                "extra": case.extra,
                "expect_error": case.expect_error,
            }
        )
    job = {
        "mode": "check",
        "exercise": exercise.id,
        "function": exercise.function,
        "file": str(file),
        "backend": backend,
        "cases": job_cases,
    }
    (run_dir / "job.json").write_text(json.dumps(job))


def read_result(run_dir: Path) -> dict:
    path = run_dir / "result.json"
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    for entry in data.get("cases", []):
        arrays = []
        for out in entry.get("outputs", []):
            arrays.append(np.load(run_dir / out["file"], allow_pickle=False))
        entry["arrays"] = arrays
    return data


def line_containing(file: Path, needle: str) -> str:
    try:
        for number, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if needle in line and not line.lstrip().startswith("#"):
                return f"{file}:{number}"
    except OSError:
        pass
    return ""


LOOK_FOR = {
    "unwritten-output": "tl.store",
    "out-of-bounds-write": "tl.store",
    "out-of-bounds-read": "tl.load",
}


def where_to_look(failure: Failure, file: Path, function: str) -> Failure:
    if failure.where:
        return failure
    needle = LOOK_FOR.get(failure.kind)
    if failure.kind in ("no-kernel-launch", "torch-fallback", "missing-validation"):
        needle = f"def {function}"
    where = line_containing(file, needle) if needle else ""
    if not where:
        return failure
    return Failure(failure.case, failure.kind, failure.message, failure.cause, where)


def process_failure(case_name: str, run: sandbox.RunResult) -> Failure:
    if run.timed_out:
        return Failure(
            case_name,
            "timeout",
            f"still running after {run.seconds:.0f} s; the run was stopped",
            "an endless loop in the host code, or a grid far larger than the input needs",
        )
    if run.output_truncated:
        return Failure(
            case_name,
            "crash",
            "the program printed more than the output limit; the run was stopped",
            "remove prints from loops (and tl.device_print from kernels) before checking",
        )
    sig = run.signal
    name = SIGNAL_NAMES.get(sig, f"signal {sig}") if sig else f"exit status {run.exit_code}"
    if sig == signals.SIGXCPU:
        return Failure(
            case_name, "timeout", "used up its CPU-time limit", "an endless loop or a far too large grid"
        )
    cause = (
        "most likely an out-of-bounds store: a store without a mask wrote past the end of a buffer and "
        "corrupted memory — mask every tl.store with `offsets < n`"
    )
    if sig == signals.SIGKILL:
        cause = "killed: it used too much memory, or was stopped"
    return Failure(
        case_name, "crash", f"the process running your kernel died ({name}) during this case", cause
    )


def check(
    exercise: Exercise,
    file: Path,
    backend: str,
    zygote: sandbox.Zygote,
    seed: int | None = None,
    timeout: float = 120.0,
    on_output: Callable[[str], None] | None = None,
    on_start: Callable[[sandbox.Run], None] | None = None,
    keep_run_dir: bool = False,
) -> Verdict:
    started = time.monotonic()
    file = Path(
        file
    ).resolve()  # the child runs in its own directory: a relative path would not resolve there
    seed = int(seed if seed is not None else random.SystemRandom().randrange(1, 2**31))
    contract = contracts.get(exercise.id)
    cases = contract.cases(np.random.default_rng(seed), backend)
    verdict = Verdict(exercise=exercise.id, backend=backend, seed=seed, file=str(file))
    run_dir = sandbox.new_run_dir()
    try:
        write_job(exercise, file, backend, cases, run_dir, getattr(contract, "ARG_NAMES", None))
        handle = zygote.start(run_dir, sandbox.default_limits(backend, timeout))
        if on_start:
            on_start(handle)
        run = handle.wait(on_output)
        verdict.output = run.output
        result = read_result(run_dir)
        judge_all(verdict, contract, cases, result, run, file, exercise.function)
        if hasattr(contract, "compile_items") and not result.get("import_error"):
            trusted_compile(verdict, contract, file, backend, zygote, timeout)
    finally:
        if not keep_run_dir:
            sandbox.remove_run_dir(run_dir)
    verdict.duration_s = time.monotonic() - started
    return verdict


def trusted_compile(
    verdict: Verdict, contract: object, file: Path, backend: str, zygote: sandbox.Zygote, timeout: float
) -> None:
    """Grade what the compiler makes of the learner's kernel for a GPU (e.g. occupancy) from a compile that
    never imports the learner's file: the parent reads the kernel's source as text, a separate sandboxed child
    (job mode `compile`) compiles only that function, with the signature and constexprs the contract fixes.
    The numbers come from triton and ptxas in that child, not from anything the learner's process reported."""
    name = getattr(contract, "COMPILE_CASE", "compiled for the GPU")
    items, failures = contract.compile_items(file.read_text(encoding="utf-8", errors="replace"))
    results: list[dict] = []
    if items:
        run_dir = sandbox.new_run_dir()
        try:
            (run_dir / "job.json").write_text(
                json.dumps({"mode": "compile", "file": str(file), "items": items})
            )
            run = zygote.start(run_dir, sandbox.default_limits(backend, max(timeout, 180.0))).wait()
            data = read_json(run_dir / "inspect.json")
            results = list(data.get("results", [])) if isinstance(data, dict) else []
            if len(results) != len(items):
                failures.append(process_failure(name, run))
        finally:
            sandbox.remove_run_dir(run_dir)
        if len(results) == len(items):
            failures += contract.judge_compile(results)
    verdict.failures.extend(failures)
    verdict.cases.append(CaseResult(name, not failures))


def read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def judge_all(
    verdict: Verdict,
    contract: object,
    cases: list[Case],
    result: dict,
    run: sandbox.RunResult,
    file: Path,
    function: str,
) -> None:
    if result.get("import_error"):
        err = result["import_error"]
        message = f"{err['type']}: {err['message']}"
        if err.get("source"):
            message += f"\n    {err['source']}"
        verdict.failures.append(
            Failure("import", "exception", message, err.get("hint", ""), err.get("where", ""))
        )
        verdict.cases = [CaseResult(c.name, False) for c in cases]
        return
    entries = {e["name"]: e for e in result.get("cases", [])}
    interrupted = run.exit_code != 0 or run.timed_out or run.output_truncated
    for case in cases:
        entry = entries.get(case.name)
        if entry is None:
            if interrupted and not any(f.kind in ("crash", "timeout") for f in verdict.failures):
                verdict.failures.append(process_failure(case.name, run))
            verdict.cases.append(CaseResult(case.name, False))
            continue
        if entry.get("status") == "skipped":
            note = f"skipped {case.name}: {entry.get('reason', '')}"
            verdict.notes.append(note)
            continue
        failures = [where_to_look(f, file, function) for f in contract.check(case, entry)]
        verdict.failures.extend(failures)
        verdict.cases.append(CaseResult(case.name, not failures))
