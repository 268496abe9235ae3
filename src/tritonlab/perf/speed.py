"""The speed of a passing GPU check, timed by a process that never imports the learner's file (issue 19).

Two sandboxed runs, after the check passed:

1. **record** (job mode `speed_record`, the learner's compile cache): the learner's module is
   imported and its function called ONCE on the exercise's representative size (the first bench case of its
   reference kernel in `perf/kernels/cases.py`), with the grader's launch recorder on (grading/launches.py, as
   in a check). Nothing is timed here: the run writes the launch record and whether the result agrees with
   the reference kernel.
2. **time** (job mode `speed`, the replay's cache, a trusted mode: runs/caches.py): the kernels are rebuilt
   from the file's text alone (grading/replay/), the inputs are made again here from the same case
   definition, the recorded allocations re-created, the launches replayed once and compared with the course
   reference kernel, then timed with the bench protocol (perf/bench.py: `measure_case`, a short warm-up and
   repetition) next to the reference on the same inputs. Its rows are what the verdict's `"speed"` reports.

The record is hostile data (the first run executed learner code); the replay checks everything in it, as
for a check. What a learner's process could fake about its own timing, it no longer reports.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RECORD_RESULT = "speed-record.json"  # the record run's report
SPEED_RESULT = "speed.json"  # the timing run's report: {"rows": [...], "problems": [...]}


def representative_case(exercise_id: str, device: str) -> Any:
    """The bench case a passing check of this exercise is timed on (trusted code: perf/kernels)."""
    from tritonlab.perf import bench_learner
    from tritonlab.perf.kernels import cases as C

    kernel, _adapt = bench_learner.EXERCISE_KERNELS[exercise_id]
    return C.cases_for(kernel, device, tiny=device != "cuda")[0]


def guarded_inputs(args: tuple, device: str) -> tuple[list, list[tuple], dict[str, Any]]:
    """Each tensor argument copied into an input-guard buffer labelled like a check's inputs: the call's
    arguments, the (label, view, guarded, snapshot) entries the recorder names, and label -> buffer for the
    replay."""
    import torch

    from tritonlab.grading import guards

    call, entries, buffers = [], [], {}
    for i, arg in enumerate(args):
        if isinstance(arg, torch.Tensor):
            label = f"input `arg{i}`"
            view, g = guards.make_input(arg, "contiguous", device, label)
            entries.append((label, view, g, None))
            buffers[label] = g.buffer
            call.append(view)
        else:
            call.append(arg)
    return call, entries, buffers


def record_main(job: dict, run_dir: Path) -> int:
    """Run 1, in the learner's sandboxed process: one recorded call on the representative case."""
    import torch

    from tritonlab.grading import guards, harness, launches, torch_ops
    from tritonlab.perf import bench_learner

    out: dict[str, Any] = {"problems": []}

    def flush() -> None:
        (run_dir / RECORD_RESULT).write_text(json.dumps(out, default=str))

    learner_file = os.path.realpath(job["file"])
    try:
        module = harness.load_learner(learner_file, job.get("search_dir"))
        fn = getattr(module, job["function"])
    except BaseException as exc:  # noqa: BLE001 - the learner's error is data
        out["import_error"] = harness.describe_exception(exc, learner_file)
        flush()
        return 0
    _kernel, adapt = bench_learner.EXERCISE_KERNELS[job["exercise"]]
    device = "cuda" if job.get("gpu", True) else "cpu"
    case = representative_case(job["exercise"], device)
    out["case"] = case.label
    args = case.make()
    guards.LEARNER_FILE = learner_file
    guards.install_factories()
    launches.install_launch_counter()
    call, entries, _buffers = guarded_inputs(args, device)
    rec = guards.Recorder()
    for label, _view, g, _snapshot in entries:
        rec.inputs[g.buffer.untyped_storage().data_ptr()] = harness.arg_name(label)
        rec.input_guards.append(g)
    try:
        guards.activate(rec)
        with torch_ops.op_recorder():
            value = adapt(fn)(*call)
        guards.activate(None)
        if device == "cuda":
            torch.cuda.synchronize()
    except BaseException as exc:  # noqa: BLE001
        guards.activate(None)
        info = harness.describe_exception(exc, learner_file)
        out["problems"].append(f"{case.label}: your kernel raised {info['type']}: {info['message']}")
        flush()
        return 0
    ok, why = bench_learner.agrees(value, case.ours(*args))
    if not ok:
        out["problems"].append(f"{case.label}: your kernel {why}; not timed — run `tritonlab check` first")
        flush()
        return 0
    outputs = [value] if isinstance(value, torch.Tensor) else []
    out["record"] = launches.launch_record(rec, entries, outputs)
    flush()
    return 0


def trusted_main(job: dict, run_dir: Path) -> int:
    """Run 2 (mode `speed`, never imports the learner's file): replay the record, compare, time."""
    import torch

    from tritonlab.grading.replay import Refused
    from tritonlab.grading.replay.replayer import MAX_ARGS, Replayer, _dict, _list
    from tritonlab.grading.replay.source import build_kernels
    from tritonlab.perf import bench, bench_learner

    out: dict[str, Any] = {"rows": [], "problems": []}
    device = "cuda" if job.get("gpu", True) else "cpu"
    try:
        source = (run_dir / "source.py").read_text(encoding="utf-8", errors="surrogateescape")
        run_kernels, lower_kernels = build_kernels(source, job.get("file") or "learner.py")
        exercise = job.get("exercise")
        if exercise not in bench_learner.EXERCISE_KERNELS:
            raise Refused("this exercise has no speed case")
        record = _dict(job.get("record"), "record")
        case = representative_case(exercise, device)
        args = case.make()
        _call, _entries, buffers = guarded_inputs(args, device)
        replayer = Replayer(device, run_dir)
        replayer.build_buffers(record, buffers)
        steps = replayer.steps(record, run_kernels, lower_kernels)
        if not any(e.get("op") == "launch" for e in record["events"] if isinstance(e, dict)):
            raise Refused("the record holds no kernel launch")

        def launches() -> None:  # the timed call: the recorded launches (and copies and fills) alone
            for step in steps:
                step()

        outputs = [replayer.tensor(s) for s in _list(record.get("outputs"), "outputs", MAX_ARGS)]
        launches()
        if device == "cuda":
            torch.cuda.synchronize()
        reference = case.ours
        ok, why = bench_learner.agrees(outputs[0] if outputs else None, reference(*args))
        if not ok:
            raise Refused(f"the recorded launches alone: {why}")
        peaks = bench_learner.peaks_of_this_gpu(job.get("peaks_by_gpu"), device == "cuda")
        case.make = lambda: args  # the replayed launches read these buffers' inputs; the reference the same
        case.ours = lambda *_args: launches()
        case.peers = {bench_learner.REFERENCE: reference}
        row = bench.measure_case(case, peaks, gpu=device == "cuda", warmup=10, rep=40)
        out["rows"].append(bench_learner.learner_row(row, peaks))
        out["timed_by"] = "the replay of your recorded launches, in a process that never imported your file"
    except Refused as exc:
        out["problems"].append(f"not timed: {exc}")
    except Exception as exc:  # noqa: BLE001 - launches that fail on their own are reported, not raised
        message = (str(exc).strip().splitlines() or [""])[0][:300]
        out["problems"].append(
            f"not timed: the recorded launches fail when run on their own ({type(exc).__name__}: {message})"
        )
    (run_dir / SPEED_RESULT).write_text(json.dumps(out, default=str))
    return 0
