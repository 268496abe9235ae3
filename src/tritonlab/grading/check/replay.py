"""Step 6 of a check, `replay`, parent side: the launches alone, in a fresh child that never imports the
learner's module (grading/replay/ is that child). Each returned case's recorded launches are redone there on
fresh buffers; the outputs must equal what the learner's function returned, else the host computed the result
(`host_computed` on the case's entry, which the judge fails)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from tritonlab import config
from tritonlab.grading import contracts
from tritonlab.grading.check.job import encode_case
from tritonlab.grading.check.read import read_record
from tritonlab.grading.check.run import child_seconds, run_limits, usage
from tritonlab.grading.contracts import Case
from tritonlab.i18n import t
from tritonlab.runs import caches, rundir, runfolder, sandbox


def replay_cases(
    contract: object,
    cases: list[Case],
    result: dict,
    run_dir: Path,
    source: str,
    file: Path,
    backend: str,
    zygote: sandbox.Zygote,
    timeout: float,
    timings: dict | None = None,
    policy: dict | None = None,
) -> object:
    """Redo each returned case's recorded launches in a fresh child (grading/replay/) and compare its
    outputs with what the check child returned: a difference is the host's doing (`host_computed`).
    `timings` (the verdict's) gets the replay run's phases when the run was remote; `policy` (the exercise's
    `[host]` table) says which constants the host may fill an allocation with (`fills`, default zero).

    A returned case whose record holds no launch fails unless every output the launches must give is empty:
    the launch counts and records of the check child are the learner's to forge, so "no launch" is decided
    here, from the record alone, and never waived.

    Returns what the replay child reported as its launches' variants (hostile until validated:
    check/precompile.py keeps them for the next check's precompile), None when nothing was replayed."""
    if not getattr(contract, "REPLAY", True) or result.get("import_error"):
        return None
    entries = {e.get("name"): e for e in result.get("cases", []) if isinstance(e, dict)}
    todo: list[tuple[int, dict, dict]] = []
    for i, case in enumerate(cases):
        entry = entries.get(case.name)
        if (
            entry is None
            or entry.get("status") != "returned"
            or case.expect_error
            or entry.get("host_computed")
        ):
            continue
        record = read_record(run_dir, i)
        if isinstance(record, str):
            entry["host_computed"] = record
            continue
        events = record.get("events")
        launched = isinstance(events, list) and any(
            isinstance(e, dict) and e.get("op") == "launch" for e in events
        )
        if not launched:
            if entry.get("launches"):
                entry["host_computed"] = t("grader.replay_counted_no_record")
            elif produced_outputs(entry, getattr(contract, "REPLAY_OUTPUTS", None)):
                # no launch made these outputs, whatever the check child reports about itself
                entry["no_launch"] = True
            continue
        todo.append((i, entry, record))
    if not todo:
        return None
    replay_dir, warm = zygote.new_run_dir(cache=caches.REPLAY)
    if timings is not None:
        timings["replay_warm_child"] = warm
    try:
        (replay_dir / "source.py").write_bytes(source.encode("utf-8", errors="surrogateescape"))
        job_cases = []
        for i, _entry, record in todo:
            args, kwargs = encode_case(cases[i], i, getattr(contract, "ARG_NAMES", None), replay_dir)
            # the numbers the grader itself hands the function beyond the arguments (dropout's seed + 1 and
            # offset + shift come from the case's extra): declared scalars too (replay/trust.py)
            extra = [v for v in cases[i].extra.values() if isinstance(v, (int, float, list))][:64]
            job_case = {"index": i, "args": args, "kwargs": kwargs, "record": record, "declared": extra}
            if cases[i].extra.get("huge"):
                job_case["huge"] = cases[i].extra["huge"]
            job_cases.append(job_case)
        job = {
            "mode": "replay",
            "backend": backend,
            "file": str(file),
            "source": "source.py",
            "cases": job_cases,
            "tile_map": bool(getattr(contract, "TILE_MAP", False)),
            "fills": fill_policy(policy or {}),
            "compile_ahead": config.precompile_enabled(),  # on a GPU: every launch compiled at once, first
        }
        (replay_dir / "job.json").write_text(json.dumps(job))
        run = zygote.start(replay_dir, run_limits(backend, timeout, [cases[i] for i, _e, _r in todo])).wait()
        if timings is not None:
            timings["replay_run_s"] = run.seconds
            usage(timings, "replay", run)
            if run.timings:
                timings["replay_run"] = run.timings
        try:
            reply = rundir.read_json(replay_dir / "replay.json")  # capped and depth-checked like any run's
            replayed = reply.get("cases", {})
            result["replay_seconds"] = {k: reply.get(k) for k in ("lower_seconds", "seconds")} | {
                "wall": run.seconds
            }
            if timings is not None:
                child_seconds(timings, "replay_child", [reply.get("seconds")])
                compiled = reply.get("compiled_here")
                if isinstance(compiled, int) and not isinstance(compiled, bool) and 0 <= compiled < 1 << 20:
                    timings["replay_compiled"] = compiled  # kernels the replay compiled itself (diagnostic)
                ahead = reply.get("ahead")  # its launches compiled at once before the first ran (GPU)
                ahead = ahead if isinstance(ahead, dict) else {}
                seconds = ahead.get("seconds")
                if isinstance(seconds, int | float) and not isinstance(seconds, bool) and 0 <= seconds < 1e6:
                    timings["replay_ahead_s"] = seconds
                for field, name in (
                    ("compiled_here", "replay_ahead_compiled"),
                    ("unforeseen", "replay_unforeseen"),
                ):
                    count = ahead.get(field)
                    if isinstance(count, int) and not isinstance(count, bool) and 0 <= count < 1 << 20:
                        timings[name] = count  # diagnostics: the ahead's own compiles; launches it missed
            launched = reply.get("variants")
        except (OSError, ValueError, AttributeError, rundir.Malformed):
            replayed, launched = {}, None
        atomics = backend == "gpu" and "atomic_" in source
        # a case whose check child ran the kernels through the interpreter on a GPU, the replay compiled
        interpreted = getattr(contract, "interpreted_on_gpu", None) if backend == "gpu" else None
        for i, entry, _record in todo:
            got = replayed.get(str(i))
            if got is None:
                entry["host_computed"] = (
                    t("grader.replay_timed_out")
                    if run.timed_out
                    else t("grader.replay_ended", status=run.signal or run.exit_code)
                )
            elif got.get("refused"):
                entry["host_computed"] = str(got["refused"])[:600]
            elif cases[i].extra.get("huge"):
                entry["huge_summary"] = got.get("huge")
                entry["host_computed"] = compare_huge(entry, got.get("huge"))
            else:
                arrays = replay_arrays(replay_dir, i, got.get("outputs"), entry)
                if isinstance(arrays, str):
                    entry["host_computed"] = arrays
                    continue
                tolerant = atomics or bool(interpreted and interpreted(cases[i]))
                entry["host_computed"] = compare_replay(
                    entry, arrays, tolerant=tolerant, indices=getattr(contract, "REPLAY_OUTPUTS", None)
                )
                if "tiles" in got and isinstance(entry.get("data"), dict):
                    # the map the replay child saw replaces the one from the process that ran learner code
                    entry["data"] = {**entry["data"], "tiles": got["tiles"], "tiles_from": "replay"}
    finally:
        runfolder.remove_run_dir(replay_dir)
    return launched


def produced_outputs(entry: dict, indices: tuple[int, ...] | None) -> bool:
    """Whether the outputs the launches must give hold any element (an empty case computes nothing)."""
    outputs = [o for o in entry.get("outputs", []) if isinstance(o, dict)]
    picked = [outputs[k] for k in (indices or range(len(outputs))) if k < len(outputs)]
    return any(int(np.prod(o.get("shape") or [1])) > 0 for o in picked)


def fill_policy(policy: dict) -> list[float]:
    """The constants the exercise lets the host fill an allocation with (`[host] fills`; zero always)."""
    values: list[float] = [0.0]
    raw = policy.get("fills", [])
    for v in raw if isinstance(raw, list) else []:
        if isinstance(v, str) and v.strip().lower() in ("inf", "-inf", "+inf", "nan"):
            values.append(float(v))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            values.append(float(v))
    return values


REPLAY_FILE = re.compile(r"r(\d+)_o(\d+)\.npy")


def replay_arrays(replay_dir: Path, index: int, names: object, entry: dict) -> list[np.ndarray] | str:
    """The replay child's output arrays for case `index`, read like any run's output (header first, plain
    numbers only, never unpickled, the file's name checked and its size capped by what the function returned;
    shape and dtype are compared after)."""
    if not isinstance(names, list) or len(names) > 64:
        return t("grader.replay_malformed")
    # as many bytes as the function returned, and a little more: a bigger output differs anyway
    budget = rundir.NpyBudget((1 << 20) + sum(int(a.nbytes) for a in entry.get("arrays", [])))
    arrays = []
    for k, name in enumerate(names):
        match = REPLAY_FILE.fullmatch(name) if isinstance(name, str) else None
        if match is None or int(match.group(1)) != index:
            return t("grader.replay_malformed")
        try:
            arrays.append(rundir.read_npy(replay_dir / name, budget))
        except rundir.Malformed as exc:
            return t("grader.replay_unreadable", index=k, error=exc)
    return arrays


ROUNDING = "rounding"  # compare_replay's `tolerant` (any true value): outputs of two executions, or atomics


def compare_replay(
    entry: dict, replayed: list[np.ndarray], tolerant: bool | str, indices: tuple[int, ...] | None = None
) -> str:
    """ "" when the replay's outputs equal what the function returned (bit for bit, or, `tolerant`, within
    rounding), else which output differs. Tolerant where the two results may differ by rounding: a kernel
    with atomics on a GPU (the atomic adds land in another order each run), or two executions of the same
    launches (a GPU check whose cases ran the kernels through Triton's interpreter, grouped-matmul-order's
    tile-order cases; the replay compiles them): within 8 units of the output dtype's rounding plus 0.1 % of
    the output's largest magnitude — far below what a host writing the result would have to change. (Atomics
    were once allowed a relative 1e-3 only: less than one bfloat16 unit, so a right attention backward whose
    dQ is summed with atomics failed as host-computed on the H200 on 3 of 2,097,152 elements.) `indices`
    (the contract's `REPLAY_OUTPUTS`) picks the returned outputs the launches must produce, where a custom contract returns
    more (autotune's per-config snapshots, autograd-wrap's loss, which the grader computes itself)."""
    arrays = entry.get("arrays", [])
    if indices is None:
        indices = tuple(range(len(arrays)))
    if any(k >= len(arrays) for k in indices):
        return t("grader.replay_fewer_returned", count=len(arrays))
    returned = [arrays[k] for k in indices]
    if len(replayed) != len(returned):
        return t("grader.replay_count_differs", replayed=len(replayed), returned=len(returned))
    for j, (a, b) in enumerate(zip(returned, replayed, strict=True)):
        k = indices[j]
        if a.shape != b.shape or a.dtype != b.dtype:
            return t("grader.replay_shape_differs", index=k)
        if tolerant:  # atomics or two executions: the same launches, summed in another order
            dtype = entry["outputs"][k].get("dtype", "")
            x, y = contracts.decode(a, dtype), contracts.decode(b, dtype)
            finite = np.abs(y[np.isfinite(y)])
            scale = float(finite.max()) if finite.size else 0.0
            unit = contracts.UNIT_ROUNDOFF.get(dtype, 0.0)
            with np.errstate(invalid="ignore"):
                close = np.abs(x - y) <= 8 * unit * np.abs(y) + 1e-3 * scale
            same = close | (x == y) | (np.isnan(x) & np.isnan(y))
        else:
            same = a == b
        if not bool(np.all(same)):
            differ = int(np.size(same) - np.count_nonzero(same))
            return t("grader.replay_differs", index=k, count=differ, total=a.size)
    return ""


def compare_huge(entry: dict, summary: object) -> str:
    """A huge case: the digest of what the function returned (check child) against the digest of what the
    launches alone gave (replay child)."""
    if not isinstance(summary, dict):
        return t("grader.replay_nothing_for_case")
    if summary.get("problem"):
        return ""  # judged as wrong-shape/wrong-dtype from the summary
    returned = [o.get("digest") for o in entry.get("huge_outputs", []) if isinstance(o, dict)]
    if returned != [summary.get("digest")]:
        return t("grader.replay_huge_differs")
    return ""
