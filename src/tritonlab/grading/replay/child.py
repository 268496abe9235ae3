"""The replay job's entry (mode `replay`, named in `runs/zygote.py:ENTRIES`): rebuild the kernels from the
file's text, lower every recorded launch for a GPU before any kernel runs, then replay each case on fresh
buffers and write its outputs (or, for a huge case, a summary judged here) to `replay.json` after every case."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from tritonlab import i18n
from tritonlab.grading.replay import Refused, variants
from tritonlab.grading.replay.replayer import MAX_ARGS, Replayer, _dict, _list
from tritonlab.grading.replay.source import build_kernels
from tritonlab.grading.replay.trust import HostValues, file_literals

REPLAY_RESULT = "replay.json"


@contextlib.contextmanager
def tile_map(wanted: bool) -> Any:
    """For contracts with `TILE_MAP` on the interpreter: which program stored to which output tile, seen here,
    in a process that never ran the learner's host code (grading/contracts/_tiles.py)."""
    if not wanted:
        yield None
        return
    from tritonlab.grading.contracts import _tiles

    with _tiles.recording() as tap:
        yield tap


def tap_tiles(tap: Any, out: Any) -> list | None:
    from tritonlab.grading.contracts import _tiles

    return _tiles.tiles_of(tap, out)


def device_scratch() -> None:
    """Give kernels that build tensor descriptors on the device (`tl.make_tensor_descriptor`, lesson 14) the
    global scratch memory Triton asks for at launch: the learner's own `triton.set_allocator` ran in the check
    child, never here. Plain torch allocations on the current device, like the learner's."""
    import torch
    import triton

    set_allocator = getattr(triton, "set_allocator", None)
    if set_allocator is not None:
        set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))


def run_replay(job: dict, run_dir: Path) -> int:
    """Child entry (mode `replay`): replay each case's record; write replay.json after every case."""
    import numpy as np
    import torch

    from tritonlab.grading import guards, huge, interp

    interp.install()
    device = "cuda" if job["backend"] == "gpu" else "cpu"
    if device == "cuda":
        device_scratch()
    out: dict[str, Any] = {"cases": {}}

    def flush() -> None:
        (run_dir / REPLAY_RESULT).write_text(json.dumps(out))

    source = (run_dir / job["source"]).read_text(encoding="utf-8", errors="surrogateescape")
    filename = job.get("file") or "learner.py"
    try:
        run_kernels, lower_kernels = build_kernels(source, filename)
        failure = ""
    except Refused as exc:
        failure, run_kernels, lower_kernels = str(exc), {}, {}
    except Exception as exc:  # noqa: BLE001 - a kernel that cannot be rebuilt from its source alone
        failure = i18n.t("grader.kernels_not_rebuilt", error=f"{type(exc).__name__}: {exc}")
        run_kernels, lower_kernels = {}, {}
    literals = file_literals(source)
    started = time.perf_counter()
    try:  # kernels this process compiles, not what other checks write into the shared cache meanwhile
        from tritonlab.grading.replay.precompile import compiled_here, count_compiles

        count_compiles()
        compiled_before: int | None = compiled_here()
    except Exception:  # noqa: BLE001 - a Triton without a cache-manager knob: count the cache's entries
        compiled_before = None
    entries_before = cache_entries() if compiled_before is None else 0  # a scan of the cache: only if needed
    launched: list[dict] = []  # the distinct launches, as variants: the next check's precompile (variants.py)
    ahead: list[
        dict
    ] = []  # the same, from the records alone (replay/lower.py Pointer), compiled ahead on a GPU
    for case in job["cases"]:  # first lower every launch, before any kernel runs on the interpreter
        key = str(case["index"])
        if failure:
            out["cases"][key] = {"refused": failure}
            continue
        lowering = Replayer(device, run_dir, materialize=False)
        try:
            lowering.run_events(_dict(case["record"], "record"), {}, lower_kernels)
        except Refused as exc:
            out["cases"][key] = {"refused": str(exc)}
        keep_variants(ahead, lowering.launched)
    out["lower_seconds"] = round(time.perf_counter() - started, 3)
    if (
        device == "cuda" and ahead and job.get("compile_ahead", True)
    ):  # every launch is known now: compile them at once, before the first runs
        mark = compiled_here() if compiled_before is not None else None
        out["ahead"] = compile_ahead(run_kernels, ahead)
        if mark is not None:  # what the ahead compile compiled itself (the rest were cache hits)
            out["ahead"]["compiled_here"] = compiled_here() - mark
    for case in job["cases"]:
        key = str(case["index"])
        if key in out["cases"]:
            continue
        replayer = Replayer(device, run_dir)
        try:
            inputs: dict[str, Any] = {}
            views: list[
                Any
            ] = []  # a huge case's generated inputs, in argument order (its reference reads them)
            given: list[Any] = []  # the other inputs' views (their sizes and strides are the host's to pass)
            for spec in [*case["args"], *case["kwargs"].values()]:
                if isinstance(spec, dict) and "generated" in spec:
                    view, g = huge.generate(huge.parse(spec["generated"]), device, spec["label"])
                    inputs[spec["label"]] = g.buffer
                    views.append(view)
                elif isinstance(spec, dict) and "tensor" in spec:
                    arr = np.load(run_dir / spec["tensor"], allow_pickle=False)
                    values = guards.from_numpy_storage(arr, spec["dtype"])
                    view, g = guards.make_input(
                        values, spec.get("layout", "contiguous"), device, spec["label"]
                    )
                    inputs[spec["label"]] = g.buffer
                    given.append(view)
            record = _dict(case["record"], "record")
            replayer.trust = HostValues(literals, case, record, views + given, job.get("fills") or [0])
            replayer.build_buffers(record, inputs)
            with tile_map(job.get("tile_map") and device == "cpu") as tap:
                replayer.run_events(record, run_kernels, lower_kernels)
            keep_variants(launched, replayer.launched)
            outputs = [replayer.tensor(s) for s in _list(record.get("outputs"), "outputs", MAX_ARGS)]
            if device == "cuda":
                torch.cuda.synchronize()
            if case.get("huge"):  # judged here, on the device: only a summary goes back (grading/huge.py)
                spec = _dict(case["huge"], "huge case")
                out["cases"][key] = {
                    "huge": huge.summary(str(spec.get("kind")), outputs, views, spec, device)
                }
                flush()
                continue
            files = []
            for k, t in enumerate(outputs):
                name = f"r{key}_o{k}.npy"
                np.save(run_dir / name, guards.to_bits_numpy(t), allow_pickle=False)
                files.append(name)
            out["cases"][key] = {"outputs": files}
            if tap is not None and outputs:
                out["cases"][key]["tiles"] = tap_tiles(tap, outputs[0])
        except Refused as exc:
            out["cases"][key] = {"refused": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a launch that fails on its own proves nothing
            message = (str(exc).strip().splitlines() or [""])[0][:300]
            out["cases"][key] = {
                "refused": i18n.t("grader.launches_fail_alone", error=f"{type(exc).__name__}: {message}")
            }
        flush()
    out["seconds"] = round(time.perf_counter() - started, 3)
    out["variants"] = launched
    if "ahead" in out:  # launches the records alone did not foresee: each compiled at its launch
        out["ahead"]["unforeseen"] = sum(1 for v in launched if v not in ahead)
    # how many kernels this child (and its compile-ahead forks) compiled itself: a precompile that matched
    # leaves none (grading/replay/precompile.py)
    out["compiled_here"] = (
        compiled_here() - compiled_before
        if compiled_before is not None
        else max(0, cache_entries() - entries_before)
    )
    flush()
    return 0


def compile_ahead(kernels: dict, ahead: list[dict]) -> dict:
    """On a GPU: every distinct launch of every case compiled before the first case runs, shared out between
    forked processes (replay/precompile.py); what the precompile beside the check child left compiled is a
    cache hit. A launch compiles on its own as before when this missed it."""
    from tritonlab.grading.replay.precompile import compile_variants, worker_count

    began = time.perf_counter()
    try:
        done, errors, processes, _entries = compile_variants(
            kernels, variants.validate(ahead), worker_count()
        )
    except Exception as exc:  # noqa: BLE001 - the launches compile on their own
        done, errors, processes = 0, [f"{type(exc).__name__}: {str(exc)[:200]}"], 0
    seconds = round(time.perf_counter() - began, 3)
    return {"compiled": done, "errors": errors[:4], "processes": processes, "seconds": seconds}


def cache_entries() -> int:
    """The number of compiled kernels in this child's compile cache (runs/caches.py `kernels_in`): the count
    of last resort, where `precompile.count_compiles` cannot be installed. The replay's cache is shared by the
    grader's children: under load, what other checks compiled meanwhile counts too."""
    import os

    from tritonlab.runs.caches import kernels_in

    try:
        return kernels_in(os.environ.get("TRITON_CACHE_DIR") or ".")
    except OSError:
        return 0


def keep_variants(kept: list[dict], launched: list[tuple]) -> None:
    """Add each launch's variant not kept yet (at most variants.MAX_VARIANTS; an argument with no variant
    form leaves its launch out)."""
    for name, args, kwargs, options in launched:
        try:
            v = variants.describe(name, args, kwargs, options)
        except ValueError:
            continue
        if v not in kept and len(kept) < variants.MAX_VARIANTS:
            kept.append(v)
