"""CHILD side of `tritonlab viz`: the harness's "viz" mode.

Reads the same job as a check (mode "viz"), builds each case's guarded inputs, calls the learner's function
with the access recorder active, and writes `viz.json`: per case, the access log of every launch plus the
guard violations the guards saw. It judges nothing; the parent only draws what was recorded.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

VIZ_RESULT = "viz.json"


def _describer(tools: Any, rec: Any) -> Any:
    """Name a tensor by the guarded buffer it lives in: an input's label, or an output allocation's."""

    def describe(t: Any) -> tuple[str, str] | None:
        try:
            ptr = t.untyped_storage().data_ptr()
        except Exception:  # noqa: BLE001 - not a tensor
            return None
        for label, _view, g, _snapshot in tools.inputs:
            if g.buffer.untyped_storage().data_ptr() == ptr:
                return "input", label.replace("`", "")
        for g in rec.allocations:
            if g.buffer.untyped_storage().data_ptr() == ptr:
                return "output", g.label.replace("#", "")
        return None

    return describe


def run_viz(job: dict, run_dir: Path) -> int:
    from tritonlab.grading import contracts, guards, harness, launches
    from tritonlab.viz.recorder import AccessLog, recording

    learner_file = os.path.realpath(job["file"])
    contract = contracts.get(job["exercise"])
    out: dict[str, Any] = {"exercise": job["exercise"], "file": learner_file, "cases": []}

    def flush() -> None:
        (run_dir / VIZ_RESULT).write_text(json.dumps(out))

    try:
        module = harness.load_learner(learner_file)
    except BaseException as exc:  # noqa: BLE001 - the learner's import error is data
        out["import_error"] = harness.describe_exception(exc, learner_file)
        flush()
        return 0
    fn = getattr(module, job["function"], None)
    if not callable(fn):
        out["import_error"] = {
            "type": "AttributeError",
            "where": learner_file,
            "source": "",
            "hint": "",
            "message": f"{os.path.basename(learner_file)} defines no `{job['function']}`",
            "traceback": "",
        }
        flush()
        return 0
    guards.install_factories()
    launches.install_launch_counter()
    for index, case in enumerate(job["cases"]):
        tools = harness.Tools("cpu", run_dir, index)
        rec = guards.Recorder()
        log = AccessLog(describe=_describer(tools, rec), max_lanes=int(job.get("max_lanes", 2_000_000)))
        entry: dict[str, Any] = {"name": case["name"], "status": "returned"}
        try:
            with recording(log):
                if hasattr(contract, "run_case"):
                    guards.activate(rec)
                    contract.run_case(fn, case, tools)
                else:
                    args = [tools.build_arg(a) for a in case["args"]]
                    kwargs = {k: tools.build_arg(v) for k, v in case.get("kwargs", {}).items()}
                    guards.activate(rec)
                    fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the learner's exception is data
            entry["status"] = "raised"
            entry["exception"] = harness.describe_exception(exc, learner_file)
        finally:
            guards.activate(None)
        entry.update(log.to_json())
        entry["guard_violations"] = [v for g in rec.allocations if (v := g.violations())]
        entry["guard_violations"] += [
            v | {"label": label} for label, _v, g, _s in tools.inputs if (v := g.violations())
        ]
        out["cases"].append(entry)
        flush()
    flush()
    return 0
