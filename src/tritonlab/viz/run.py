"""PARENT side of `tritonlab viz` and of the web page's "Visualize" button.

Picks a few small cases from the exercise's contract, runs the learner's file on them in a sandboxed
interpreter child in "viz" mode (viz/child.py), keeps the most telling case — one with an out-of-bounds
access if there is one, else one with several programs and masked lanes — and draws it. Never imports torch
or triton: the learner's code only ever runs in the child.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from tritonlab.grading import contracts
from tritonlab.grading.check.failures import process_failure
from tritonlab.grading.check.job import write_job
from tritonlab.grading.contracts import Case, Tensor
from tritonlab.models import Exercise
from tritonlab.runs import rundir, runfolder, sandbox
from tritonlab.runs.limits import default_limits
from tritonlab.viz import logview as lv
from tritonlab.viz.child import VIZ_RESULT

MAX_ELEMENTS = 40_000  # input elements of a candidate case
MAX_VIZ_BYTES = 64 << 20  # the recorder's lane budget fits well inside
CANDIDATES = 6


class VizError(RuntimeError):
    """Nothing could be recorded (the file does not import, no case fits, …): says why."""


def _size(case: Case) -> int:
    tensors = [a for a in (*case.args, *case.kwargs.values()) if isinstance(a, Tensor)]
    if tensors:
        return sum(int(t.values.size) for t in tensors)
    ints = [a for a in case.args if isinstance(a, int) and not isinstance(a, bool)]
    return max(ints) if ints else 0


def _output_size(case: Case) -> int:
    """M·N of a GEMM case a[M, K] @ b[K, N]."""
    a, b = (case.args + (None, None))[:2]
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.values.ndim == 2 and b.values.ndim == 2:
        return int(a.values.shape[0] * b.values.shape[1])
    return 0


def _plain(case: Case) -> bool:
    tensors = [a for a in (*case.args, *case.kwargs.values()) if isinstance(a, Tensor)]
    return all(t.dtype in ("float32", "int32") for t in tensors)


def candidate_cases(
    exercise_id: str,
    case: str | None = None,
    seed: int = 0,
    limit: int = CANDIDATES,
    max_elements: int = MAX_ELEMENTS,
) -> list[Case]:
    """Small cases worth drawing, in the contract's order (plain float32 ones first); `case` selects by name
    substring or by index."""
    contract = contracts.get(exercise_id)
    every = contract.cases(np.random.default_rng(seed), "interpreter")
    if case is not None:
        if case.isdigit() and int(case) < len(every):
            return [every[int(case)]]
        chosen = [c for c in every if c.name == case] or [c for c in every if case.lower() in c.name.lower()]
        if not chosen:
            names = "; ".join(c.name for c in every)
            raise VizError(f"no case of {exercise_id} matches {case!r}. Cases: {names}")
        return chosen[:1]
    fits = [
        c
        for c in every
        if c.expect_error is None
        and not c.extra.get("bf16_arithmetic")
        and "other_device" not in c.extra
        and 2 <= _size(c) <= max_elements
    ]
    fits.sort(key=lambda c: not _plain(c))  # stable: contract order within each group
    if exercise_id in lv.GEMM_EXERCISES:  # the most C tiles make the best tile map
        fits.sort(key=lambda c: (not _plain(c), -_output_size(c)))
        limit = min(limit, 3)
    if exercise_id in lv.STRIP_EXERCISES:
        flat = [c for c in fits if all(t.values.ndim == 1 for t in c.args if isinstance(t, Tensor))]
        fits = flat + [c for c in fits if c not in flat]
    return fits[:limit]


def input_dims(exercise_id: str) -> set[int]:
    """The numbers of dimensions of the tensor inputs of the cases Visualize would draw."""
    return {
        t.values.ndim
        for c in candidate_cases(exercise_id)
        for t in (*c.args, *c.kwargs.values())
        if isinstance(t, Tensor)
    }


def drawable(exercise_id: str) -> bool:
    """Whether a picture can show this exercise's accesses: the pictures draw 1-D and 2-D tensors (and a
    GEMM's tiles), so an exercise whose inputs all have more dimensions (attention's 4-D q, k, v) has none."""
    if exercise_id in lv.GEMM_EXERCISES:
        return True
    dims = input_dims(exercise_id)
    return not dims or min(dims) <= 2


def record(
    exercise: Exercise,
    file: Path,
    zygote: sandbox.Zygote,
    cases: list[Case],
    timeout: float = 120.0,
    max_lanes: int = 2_000_000,
) -> dict:
    """Run `file` on `cases` in a sandboxed interpreter child with the access recorder; return viz.json."""
    run_dir = runfolder.new_run_dir()
    try:
        contract = contracts.get(exercise.id)
        write_job(
            exercise,
            Path(file).resolve(),
            "interpreter",
            cases,
            run_dir,
            getattr(contract, "ARG_NAMES", None),
        )
        job = json.loads((run_dir / "job.json").read_text())
        job.update(mode="viz", max_lanes=max_lanes)
        (run_dir / "job.json").write_text(json.dumps(job))
        run = zygote.start(run_dir, default_limits("interpreter", timeout)).wait()
        numels = [_size(c) for c in cases]
        try:
            found = rundir.read_json(run_dir / VIZ_RESULT, MAX_VIZ_BYTES)
            result = lv.vet_log(found if found is not None else {"cases": []}, numels, max_lanes)
        except rundir.Malformed as problem:
            result = {"cases": [], "malformed": problem.message}
        result["output"] = run.output[-4000:]
        if run.exit_code != 0 or run.timed_out:
            failure = process_failure(
                cases[len(result["cases"])].name if len(result["cases"]) < len(cases) else cases[-1].name, run
            )
            result["process_failure"] = {
                "kind": failure.kind,
                "message": failure.message,
                "cause": failure.cause,
            }
        if result.get("malformed"):
            result["process_failure"] = {"kind": "crash", "message": result["malformed"], "cause": ""}
        return result
    finally:
        runfolder.remove_run_dir(run_dir)


def best_case(result: dict, exercise_id: str) -> dict | None:
    """The case to draw: out-of-bounds first, then several programs with masked lanes (most programs for GEMM)."""
    scored = []
    for index, case in enumerate(result.get("cases", [])):
        launch = lv.main_launch(case)
        if launch is None:
            continue
        s = lv.stats(launch)
        p, masked, oob = s["programs"], s["masked_lanes"] > 0, s["oob_lanes"] > 0
        if exercise_id in lv.GEMM_EXERCISES:
            key: tuple = (not oob, -min(p, 64), index)
        else:
            lanes = sum(len(a["active"]) for prog in launch["programs"] for a in prog["accesses"]) or 1
            visible = min(s["masked_lanes"] / lanes, 0.05)  # masked lanes a picture can show
            if oob:  # the failing access, in the smallest readable launch
                key = (False, p > 32, 0.0, False, index)
            else:
                key = (True, not (p >= 2 and masked), -visible, not p >= 4, index)
        scored.append((key, case))
    if scored:
        return min(scored, key=lambda item: item[0])[1]
    cases = result.get("cases", [])
    return cases[0] if cases else None


def render(case: dict, exercise_id: str, out: str | Path) -> Path:
    from tritonlab.viz.pictures import draw

    return draw(case, exercise_id, out)


def summary(case: dict, exercise_id: str) -> dict:
    launch = lv.main_launch(case)
    info: dict[str, Any] = {
        "case": case.get("name"),
        "status": case.get("status"),
        "launches": len(case.get("launches", [])),
    }
    if launch is not None:
        info.update(kind=lv.kind_of(exercise_id, launch), kernel=launch["kernel"], **lv.stats(launch))
        dims = sorted({len(launch["tensors"][t]["shape"]) for t, _ in lv.touched_pairs(launch)})
        # what the picture can show: a GEMM's tiles, a strip, or a map of 1-D / 2-D tensors (pictures.py)
        info["drawn"] = info["kind"] != "map" or any(d in (1, 2) for d in dims)
        info["dims"] = dims
    if case.get("exception"):
        info["exception"] = {k: case["exception"].get(k) for k in ("type", "message", "where")}
    return info


def _zygote_for(service: Any) -> tuple[sandbox.Zygote, Any]:
    """The service's interpreter worker, and the service's run queue (every run waits in that one queue,
    under one accounting: service/gate.py). On a GPU service, an extra interpreter worker kept in the
    service's own worker table, so `service.close()` stops it too; its runs still wait in the service's queue
    (a drawing's host work takes a slot like any run's, and a learner holds one slot at a time)."""
    if service.backend == "interpreter":
        return service.zygote(), service.gate()
    table, lock = getattr(service, "_zygotes", None), getattr(service, "_lock", None)
    if table is None or lock is None:
        raise VizError("this service cannot start an interpreter worker")
    gate = service.gate()
    with lock:
        z = table.get("interpreter")
        if z is None or z.dead:
            z = table["interpreter"] = sandbox.Zygote("interpreter")
    return z, gate


def visualize(
    service: Any,
    exercise_id: str,
    file: str | Path | None = None,
    *,
    case: str | None = None,
    solution: bool = False,
    out: str | Path | None = None,
    fmt: str = "png",
    timeout: float = 120.0,
    seed: int = 0,
    on_wait: Any = None,
) -> tuple[bytes, dict]:
    """Record and draw the learner's kernel for an exercise; returns (picture bytes, log).

    `file` defaults to the learner's workspace copy (`solution=True`: the reference solution). `out` keeps
    the picture there (its suffix chooses PNG or SVG), else `fmt` does and a temporary file is used. `case`
    (a case name, as in a verdict's failures, or an index) with the check's `seed` draws exactly that case;
    without it a small telling case is chosen. `on_wait(position)` while it waits in the service's run queue. The log
    is JSON-ready: {"exercise", "file", "summary", "access_log" (the drawn case), "cases_tried",
    "picture" (path or None), "output", "import_error"?}.
    """
    exercise = service.exercise(exercise_id)
    target = Path(exercise.solution if solution else (file or service.learner_file(exercise))).resolve()
    if not target.is_file():
        raise VizError(f"{target} does not exist")
    cases = candidate_cases(exercise.id, case, seed)
    if not cases:
        raise VizError(
            f"{exercise.id} has no case with a kernel launch to draw (it is not a kernel exercise)"
        )
    zygote, gate = _zygote_for(service)
    ticket = gate.acquire(on_wait, owner=getattr(service, "run_owner", None))
    try:
        result = record(exercise, target, zygote, cases, timeout)
    finally:
        gate.release(ticket)
    log: dict[str, Any] = {
        "exercise": exercise.id,
        "file": str(target),
        "output": result.get("output", ""),
        "cases_tried": [summary(c, exercise.id) for c in result.get("cases", [])],
    }
    if result.get("process_failure"):
        log["process_failure"] = result["process_failure"]
    if result.get("malformed"):
        log["malformed"] = result["malformed"]
    chosen = best_case(result, exercise.id)
    with tempfile.TemporaryDirectory(prefix="tritonlab-viz-") as tmp:
        path = Path(out) if out else Path(tmp) / f"viz.{fmt}"
        from tritonlab.viz.style import message_figure

        if result.get("import_error"):
            err = result["import_error"]
            log["import_error"] = err
            path = message_figure(
                path,
                f"{exercise.id}: your file does not import",
                f"{err['type']}: {err['message']}\n{err.get('where', '')}",
            )
        elif result.get("malformed"):
            path = message_figure(path, f"{exercise.id}: nothing to draw", result["malformed"])
        elif chosen is None:
            why = log.get("process_failure", {}).get("message", "no case was recorded")
            path = message_figure(path, f"{exercise.id}: nothing recorded", why)
        else:
            log["summary"] = summary(chosen, exercise.id)
            log["access_log"] = chosen
            path = render(chosen, exercise.id, path)
        data = path.read_bytes()
        log["picture"] = str(path) if out else None
    return data, log
