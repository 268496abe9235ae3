"""CHILD side of a run: import the learner's file by path, run the cases, write raw outputs + telemetry.

Runs only in a sandboxed child process (see sandbox.py). It reads `job.json` from its working directory and
writes `result.json` and one `.npy` file per output there. It judges nothing: the parent compares outputs
with the reference, so patching this module from the learner's file cannot change a verdict.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from tritonlab import i18n

CHECK_RESULT = "result.json"
PROGRESS = "progress.json"


def learner_frame(tb: Any, learner_file: str) -> tuple[str, int, str] | None:
    """The innermost traceback frame inside the learner's file: (file, line, source line)."""
    found = None
    for frame in traceback.extract_tb(tb):
        if os.path.realpath(frame.filename) == learner_file:
            found = (frame.filename, frame.lineno or 0, (frame.line or "").strip())
    return found


_ASKED = re.compile(r"Tried to allocate ([0-9]+(?:\.[0-9]+)?) (B|KiB|MiB|GiB|TiB)")
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def out_of_memory_hint(message: str, cap: int) -> str:
    """Why torch refused a GPU allocation: this run's cap (`cap` bytes, pool.soft_gpu_cap), or, when what the run
    held in torch's allocator plus what it asked for stayed within the cap, the GPU itself being full (other
    runs on it held the rest: the learner's code did nothing wrong and a second check may pass)."""
    torch = sys.modules.get("torch")
    try:
        held = int(torch.cuda.memory_reserved()) if torch is not None and torch.cuda.is_initialized() else 0
    except Exception:  # noqa: BLE001 - no figure: the cap's hint
        held = cap
    found = _ASKED.search(message)
    asked = float(found[1]) * _UNITS[found[2]] if found else None
    gib = 1 << 30
    if asked is not None and held + asked <= cap:
        return i18n.t(
            "grader.harness_gpu_was_full",
            held=format(held / gib, ".1f"),
            asked=format(asked / gib, ".1f"),
            cap=format(cap / gib, ".1f"),
        )
    return i18n.t("grader.harness_this_run_went_over", cap=format(cap / gib, ".1f"))


def describe_exception(exc: BaseException, learner_file: str) -> dict:
    """Learner-first description: type, message, file:line; internals folded into `traceback`."""
    etype = type(exc).__name__
    message = str(exc).strip() or etype
    where, source = "", ""
    if isinstance(exc, SyntaxError) and exc.filename and os.path.realpath(exc.filename) == learner_file:
        where = f"{exc.filename}:{exc.lineno}"
        source = (exc.text or "").rstrip()
        message = exc.msg
    else:
        frame = learner_frame(exc.__traceback__, learner_file)
        cause = exc.__cause__ or exc.__context__
        # Triton wraps an error inside a kernel (the interpreter re-raises it as InterpreterError from the launch
        # line): the wrapped error's own traceback points at the kernel's line, which is where to look.
        wrapped = type(exc).__module__.startswith("triton") and cause is not None
        if cause is not None and (frame is None or wrapped):
            frame = learner_frame(cause.__traceback__, learner_file) or frame
        if frame is not None:
            where, source = f"{frame[0]}:{frame[1]}", frame[2]
    # Triton wraps kernel errors; the first line of the message is the useful part, the rest is context.
    first_line = message.splitlines()[0] if message else etype
    hint = ""
    if "0 active drivers" in message:
        hint = i18n.t("grader.harness_this_needs_gpu_driver")
    elif etype == "OutOfMemoryError" and os.environ.get("TRITONLAB_GPU_MEMORY_CAP", "").isdigit():
        hint = out_of_memory_hint(message, int(os.environ["TRITONLAB_GPU_MEMORY_CAP"]))
    elif etype in ("CompilationError", "CompileTimeAssertionFailure"):
        hint = i18n.t("grader.harness_triton_could_not_compile")
    elif "PassManager::run failed" in message:  # Triton's own MLIR pipeline failed: a compiler bug
        version = getattr(sys.modules.get("triton"), "__version__", "?")  # Triton raised it: imported
        hint = i18n.t("grader.harness_compiler_crashed", version=version)
    return {
        "type": etype,
        "message": first_line if len(message) > 2000 else message,
        "where": where,
        "source": source,
        "hint": hint,
        "traceback": "".join(traceback.format_exception(exc)),
    }


def load_learner(path: str, search_dir: str | None = None) -> Any:
    for directory in (search_dir, os.path.dirname(path)):
        if directory and directory not in sys.path:
            sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location("learner", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["learner"] = module
    spec.loader.exec_module(module)
    return module


class Tools:
    """What a contract's custom `run_case` may use in the child."""

    def __init__(self, device: str, run_dir: Path, case_index: int) -> None:
        self.device = device
        self.run_dir = run_dir
        self.case_index = case_index
        self.inputs: list[tuple[str, Any, Any, Any]] = []  # (label, view, guarded, snapshot)

    def build_arg(self, spec: Any) -> Any:
        from tritonlab.grading import guards

        with guards.paused():  # a custom run_case builds its inputs while the recorder is active
            return self._build_arg(spec)

    def _build_arg(self, spec: Any) -> Any:
        from tritonlab.grading import guards

        if isinstance(spec, dict) and "tensor" in spec:
            import numpy as np

            arr = np.load(self.run_dir / spec["tensor"], allow_pickle=False)
            values = guards.from_numpy_storage(arr, spec["dtype"])
            label = spec.get("label", "an input")
            view, g = guards.make_input(values, spec.get("layout", "contiguous"), self.device, label)
            self.inputs.append((label, view, g, g.buffer.clone()))
            if guards._ACTIVE is not None:  # a custom run_case builds inputs while the recorder is active
                guards._ACTIVE.inputs[g.buffer.untyped_storage().data_ptr()] = arg_name(label)
                guards._ACTIVE.input_guards.append(g)
            return view
        if isinstance(spec, dict) and "generated" in spec:  # a huge case's input, made here (grading/huge.py)
            from tritonlab.grading import huge

            label = spec.get("label", "an input")
            view, g = huge.generate(huge.parse(spec["generated"]), self.device, label)
            self.inputs.append((label, view, g, huge.digest(g.buffer)))  # a digest, not a 4 GiB snapshot
            if guards._ACTIVE is not None:
                guards._ACTIVE.inputs[g.buffer.untyped_storage().data_ptr()] = arg_name(label)
            return view
        if isinstance(spec, dict) and spec.get("device"):
            return self.device
        if isinstance(spec, dict) and "value" in spec:
            return spec["value"]
        raise ValueError(f"bad argument spec {spec!r}")


def arg_name(label: str) -> str:
    """`x` from the label "input `x`" (the label itself when it names no argument)."""
    parts = label.split("`")
    return parts[1] if len(parts) >= 3 else label


def bf16_arithmetic_works() -> bool:
    """Does this Triton compute raw bf16 arithmetic correctly here? (The 3.9 interpreter gives NaN.) A GPU of
    compute capability 8.0 or more does, without the probe: the probe is a kernel compiled in the learner's
    cache, one more on every GPU check with a bf16 case (matmul's first check on an H100 compiled 13 kernels,
    12 of them the file's, H100-80GB-HBM3 run 2026-12-06 (2bb25b4))."""
    import torch
    import triton
    import triton.language as tl

    if os.environ.get("TRITON_INTERPRET") != "1" and torch.cuda.is_available():
        if torch.cuda.get_device_capability() >= (8, 0):
            return True

    @triton.jit
    def _add_one(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(x_ptr + offs, x + x, mask=mask)

    device = "cuda" if os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
    x = torch.ones(4, dtype=torch.bfloat16, device=device)
    _add_one[(1,)](x, 4, BLOCK=4)
    return bool(torch.all(x == 2).item())


def run_check(job: dict, run_dir: Path) -> int:
    import torch

    from tritonlab.grading import contracts, guards, interp, launches, torch_ops

    interp.install()  # the interpreter's patching step without its per-call listing (grading/interp.py)
    device = "cuda" if job["backend"] == "gpu" else "cpu"
    learner_file = os.path.realpath(job["file"])
    contract = contracts.get(job["exercise"])
    out: dict[str, Any] = {"cases": [], "device_type": device, "notes": []}

    def flush() -> None:
        (run_dir / CHECK_RESULT).write_text(json.dumps(out))

    try:
        module = load_learner(learner_file, job.get("search_dir"))
    except BaseException as exc:  # noqa: BLE001 - any import failure is the learner's to see
        out["import_error"] = describe_exception(exc, learner_file)
        flush()
        return 0
    fn = getattr(module, job["function"], None)
    if not callable(fn):
        out["import_error"] = {
            "type": "AttributeError",
            "message": i18n.t(
                "grader.harness_basename_defines_no_function",
                basename=os.path.basename(learner_file),
                function=job["function"],
            ),
            "where": learner_file,
            "source": "",
            "hint": i18n.t("grader.harness_define_def_function_at", function=job["function"]),
            "traceback": "",
        }
        flush()
        return 0

    guards.LEARNER_FILE = learner_file  # the name the learner module is compiled under
    guards.install_factories()
    launches.install_launch_counter()
    launches.CHECK_CONFIGS = not getattr(contract, "CHECKS_EVERY_CONFIG", False)
    if device == "cpu":  # the interpreter: which kernel line made a stray access (feedback only)
        from tritonlab.grading import where

        where.install_access_log(lambda: guards._ACTIVE, guards.learner_line)
    recorder_mode = torch_ops.op_recorder()
    skip_bf16 = None
    for index, case in enumerate(job["cases"]):
        (run_dir / PROGRESS).write_text(json.dumps({"case": index, "name": case["name"]}))
        entry: dict[str, Any] = {"name": case["name"], "function": job["function"], "device_type": device}
        if case.get("extra", {}).get("bf16_arithmetic"):
            if skip_bf16 is None:
                skip_bf16 = not bf16_arithmetic_works()
            if skip_bf16:
                entry["status"] = "skipped"
                entry["reason"] = (
                    "this Triton's interpreter computes raw bf16 arithmetic as NaN, so bf16 cases "
                    "run only on a GPU (upcast to fp32 inside your kernel either way)"
                )
                out["cases"].append(entry)
                continue
        tools = Tools(device, run_dir, index)
        rec = guards.Recorder()
        started = time.perf_counter()
        try:
            if hasattr(contract, "run_case"):
                threads = {t.ident for t in threading.enumerate()}
                guards.activate(rec)
                with recorder_mode:
                    value = contract.run_case(fn, case, tools)
                guards.activate(None)
                if getattr(contract, "REPLAY", True):
                    replayed = replay_outputs(value)
                    entry["host_computed"] = host_computed(rec, tools, replayed, threads, run_dir, index)
            else:
                args = [tools.build_arg(a) for a in case["args"]]
                kwargs = {k: tools.build_arg(v) for k, v in case.get("kwargs", {}).items()}
                for label, _view, g, _snapshot in tools.inputs:
                    rec.inputs[g.buffer.untyped_storage().data_ptr()] = arg_name(label)
                    rec.input_guards.append(g)
                threads = {t.ident for t in threading.enumerate()}
                guards.activate(rec)
                with recorder_mode:
                    value = fn(*args, **kwargs)
                guards.activate(None)
                entry["host_computed"] = host_computed(rec, tools, value, threads, run_dir, index)
            entry["status"] = "returned"
        except BaseException as exc:  # noqa: BLE001 - the learner's exception is data
            guards.activate(None)
            entry["status"] = "raised"
            entry["exception"] = describe_exception(exc, learner_file)
            value = None
        entry["seconds"] = round(time.perf_counter() - started, 4)
        if device == "cuda":
            try:
                torch.cuda.synchronize()
            except BaseException as exc:  # noqa: BLE001 - a kernel fault surfaces here
                entry["status"] = "raised"
                entry["exception"] = describe_exception(exc, learner_file)
        record_outputs(entry, value, rec, tools, run_dir, index, bool(case.get("extra", {}).get("huge")))
        out["cases"].append(entry)
        flush()
    flush()
    return 0


def replay_outputs(value: Any) -> Any:
    """What the replay must reproduce. A custom contract returning {"json", "tensors"} names them in "replay"
    (e.g. autotune: the returned tensor, not the per-config snapshots the contract took); else its tensors."""
    if isinstance(value, dict):
        return value.get("replay", value.get("tensors"))
    return value


RECORD = "c{}_launches.json"  # per case: the launch record the fresh replay child redoes (grading/replay/)


def host_computed(rec: Any, tools: Tools, value: Any, threads: set, run_dir: Path, index: int) -> str:
    """First line, in this process: why the result cannot have come from the recorded launches alone ("" when
    nothing here says so). Then write the case's launch record for the fresh replay child, which is what
    decides: this process ran the learner's module, so nothing it concludes binds the parent."""
    import torch

    from tritonlab.grading import guards, launches

    if isinstance(value, dict) and "json" in value:  # a custom run_case: its tensors, beside plain data
        value = value.get("tensors")
    tensors = value if isinstance(value, (tuple, list)) else [value]
    outputs = [t for t in tensors if isinstance(t, torch.Tensor)]
    record = launches.launch_record(rec, tools.inputs, outputs)
    (run_dir / RECORD.format(index)).write_text(json.dumps(record))
    stray = guards.stray_threads(threads)
    if stray:
        names = ", ".join(repr(n) for n in stray[:4])
        return i18n.t("grader.harness_function_returned_while_n", n_stray=len(stray), names=names)
    if rec.host_hooks:
        return i18n.t("grader.harness_autotune_hooks_own_host", host_hooks=rec.host_hooks[0])
    if not rec.launches:
        return ""  # judged as no-kernel-launch (or an empty input, where nothing is to be computed)
    return launches.unknown_launch_tensor(rec)


def record_outputs(
    entry: dict, value: Any, rec: Any, tools: Tools, run_dir: Path, index: int, huge_case: bool = False
) -> None:
    import numpy as np
    import torch

    from tritonlab.grading import guards

    entry["launches"] = rec.launches
    entry["torch_ops"] = rec.torch_ops
    entry["host_copies"] = rec.host_copies
    entry["config_mismatches"] = rec.config_mismatches[:8]
    entry["op_where"] = rec.op_where
    entry["strays"] = rec.strays
    entry["guard_violations"] = [v for g in rec.allocations if (v := g.violations())]
    entry["inputs_modified"] = []
    for label, _view, g, snapshot in tools.inputs:
        if isinstance(snapshot, list):  # a generated (huge) input keeps a digest
            from tritonlab.grading import huge

            if huge.digest(g.buffer) != snapshot:
                entry["inputs_modified"].append(label)
            continue
        if not torch.equal(guards._as_bits(g.buffer), guards._as_bits(snapshot)):
            violation = g.violations()
            if violation:
                violation["label"] = label
                entry["guard_violations"].append(violation)
            interior_now = guards._as_bits(g.interior)
            interior_then = guards._as_bits(snapshot[g.guard : g.guard + g.numel])
            if not torch.equal(interior_now, interior_then):
                entry["inputs_modified"].append(label)
    if isinstance(value, dict) and "json" in value:  # custom contracts return plain data
        entry["data"] = value["json"]
        value = value.get("tensors")
    tensors = value if isinstance(value, (tuple, list)) else [value]
    entry["outputs"] = []
    entry["returned"] = type(value).__name__
    entry["aliases"] = output_aliases(tensors, tools)
    if huge_case:  # too large to read back: a digest per tensor; the replay child judges (grading/huge.py)
        from tritonlab.grading import huge

        entry["huge_outputs"] = [
            {"shape": list(t.shape), "dtype": guards.dtype_name(t.dtype), "digest": huge.digest(t)}
            for t in tensors
            if isinstance(t, torch.Tensor)
        ]
        return
    for k, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            continue
        name = f"c{index}_o{k}.npy"
        np.save(run_dir / name, guards.to_bits_numpy(t), allow_pickle=False)
        entry["outputs"].append(
            {
                "file": name,
                "dtype": guards.dtype_name(t.dtype),
                "shape": list(t.shape),
                "stride": list(t.stride()),
                "device_type": t.device.type,
                "contiguous": t.is_contiguous(),
                "guarded": rec.owner_of(t) is not None,
            }
        )


def output_aliases(tensors: list, tools: Tools) -> list[dict]:
    """Each returned tensor whose memory overlaps an input's (a view of it, `x.t()`, or the input itself):
    {"output": index, "input": label}. Reported only; the parent judges (contracts/compare.host_checks)."""
    import torch

    spans = []
    for label, _view, g, _snapshot in tools.inputs:
        storage = g.buffer.untyped_storage()
        spans.append((label, storage.data_ptr(), storage.data_ptr() + storage.nbytes()))
    found = []
    for k, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor) or t.numel() == 0:
            continue
        storage = t.untyped_storage()
        start, end = storage.data_ptr(), storage.data_ptr() + storage.nbytes()
        for label, lo, hi in spans:
            if start < hi and lo < end:
                found.append({"output": k, "input": label})
                break
    return found


def run_program(job: dict, run_dir: Path) -> int:
    """`tritonlab run FILE`: execute the learner's file as __main__, learner-first errors."""
    import runpy

    learner_file = os.path.realpath(job["file"])
    for directory in (job.get("search_dir"), os.path.dirname(learner_file)):
        if directory:
            sys.path.insert(0, directory)
    sys.argv = [learner_file, *job.get("argv", [])]
    try:
        runpy.run_path(learner_file, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException as exc:  # noqa: BLE001
        info = describe_exception(exc, learner_file)
        Path("error.json").write_text(json.dumps(info))
        return 1
    return 0
