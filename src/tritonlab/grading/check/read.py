"""Step 4 of a check, `read`: what the check child left in its run directory, read as hostile data. The child ran
learner code, so `result.json`, every output array and every launch record is size-capped, depth-checked and
type-checked before the parent uses it (runs/rundir.py does the reading); nothing is unpickled.

The entries a contract's judgement reads are vetted here (`vet_entries`); the launches the fresh replay will
redo are taken from the parent's own reading of each case's record (`attach_replayed_launches`), never from
what the child said about them."""

from __future__ import annotations

import json
from pathlib import Path

from tritonlab import i18n
from tritonlab.grading import contracts
from tritonlab.grading.contracts import Case, Tensor
from tritonlab.runs import rundir

MIN_OUTPUT_BYTES = 64 << 20  # what a run may return in arrays, at least (the cases' inputs decide above)
# Bytes per element of every dtype a run may return: an output file must hold elements of its declared width.
ITEMSIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1}
ITEMSIZE |= {"int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8}


def output_budget(cases: list[Case]) -> int:
    """Bytes of output arrays the parent loads from one check: four times the inputs, at least 64 MiB."""
    inputs = sum(
        int(a.values.size) * 8
        for case in cases
        for a in (*case.args, *case.kwargs.values())
        if isinstance(a, Tensor)
    )
    return max(MIN_OUTPUT_BYTES, 4 * inputs)


def _is_shape(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(d, int) and 0 <= d < 1 << 40 for d in value)


def vet_entries(data: object) -> dict:
    """The parts of result.json the grader relies on have the types it expects; else Malformed."""
    if not isinstance(data, dict):
        raise rundir.Malformed(i18n.t("grader.read_result_json_not_json"))
    err = data.get("import_error")
    if err is not None and not (
        isinstance(err, dict) and all(isinstance(err.get(k), str) for k in ("type", "message"))
    ):
        raise rundir.Malformed(i18n.t("grader.read_result_json_has_import"))
    cases = data.get("cases", [])
    if not isinstance(cases, list) or not all(
        isinstance(e, dict) and isinstance(e.get("name"), str) for e in cases
    ):
        raise rundir.Malformed(i18n.t("grader.read_result_json_s_cases"))
    for entry in cases:
        outputs = entry.get("outputs", [])
        if not isinstance(outputs, list) or not all(
            isinstance(o, dict) and _is_shape(o.get("shape")) and isinstance(o.get("dtype"), str)
            for o in outputs
        ):
            raise rundir.Malformed(i18n.t("grader.read_case_name_lists_outputs", name=repr(entry["name"])))
    return data


def read_result(run_dir: Path, budget_bytes: int = MIN_OUTPUT_BYTES) -> dict:
    """result.json and its output arrays, validated before use (sizes, depth, shapes, dtypes, a byte budget
    for the whole run). Raises rundir.Malformed; {} when the run wrote no result."""
    data = rundir.read_json(run_dir / "result.json")
    if data is None:
        return {}
    vet_entries(data)
    budget, seen = rundir.NpyBudget(budget_bytes), set()
    for entry in data.get("cases", []):
        arrays = []
        for out in entry.get("outputs", []):
            name = out["file"]
            if name in seen:
                raise rundir.Malformed(i18n.t("grader.read_name_named_as_more", name=name))
            seen.add(name)
            arrays.append(rundir.read_npy(run_dir / name, budget, out["shape"], ITEMSIZE.get(out["dtype"])))
        entry["arrays"] = arrays
    return data


RECORD_BYTES = 8 << 20  # a case's launch record (hostile data: the check child ran learner code)


def read_record(run_dir: Path, index: int) -> dict | str:
    """A case's launch record as parsed JSON, or why there is none usable."""
    path = run_dir / f"c{index}_launches.json"
    try:
        if path.is_symlink() or not path.is_file():
            return i18n.t("grader.read_no_launch_record_was")
        if path.stat().st_size > RECORD_BYTES:
            return i18n.t("grader.read_launch_record_too_large")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return i18n.t("grader.read_launch_record_cannot_be")
    return data if isinstance(data, dict) else i18n.t("grader.read_launch_record_malformed")


REPLAYED_LAUNCHES = contracts.REPLAYED_LAUNCHES


def attach_replayed_launches(contract: object, cases: list[Case], result: dict, run_dir: Path) -> None:
    """For a contract with `GRID_FROM_RECORD` (a persistent kernel's grid is judged): give each returned case
    entry the launches of its launch record, read here by the parent, under REPLAYED_LAUNCHES. The fresh
    replay runs exactly these launches and fails the case (host-computed) unless they reproduce the result,
    so the grids judged are the ones that computed it, not the check child's own count. Whatever the check
    child wrote under that name is dropped first."""
    for e in result.get("cases", []):
        if isinstance(e, dict):
            e.pop(REPLAYED_LAUNCHES, None)
    if not getattr(contract, "GRID_FROM_RECORD", False) or result.get("import_error"):
        return
    entries = {e.get("name"): e for e in result.get("cases", []) if isinstance(e, dict)}
    for i, case in enumerate(cases):
        entry = entries.get(case.name)
        if entry is None or entry.get("status") != "returned":
            continue
        record = read_record(run_dir, i)
        if isinstance(record, dict) and isinstance(record.get("events"), list):
            entry[REPLAYED_LAUNCHES] = replayed_launches(record["events"])


def replayed_launches(events: list) -> list[dict]:
    """Kernel name, grid and integer keyword and positional arguments of each launch in a record (hostile
    data: types checked, sizes capped)."""
    out = []
    for e in events[:256]:
        if not isinstance(e, dict) or e.get("op") != "launch":
            continue
        grid = e.get("grid") if isinstance(e.get("grid"), list) else []
        kwargs = e.get("kwargs") if isinstance(e.get("kwargs"), dict) else {}
        ints = {
            str(k)[:64]: v["int"]
            for k, v in list(kwargs.items())[:64]
            if isinstance(v, dict) and type(v.get("int")) is int
        }
        args = e.get("args") if isinstance(e.get("args"), list) else []
        out.append(
            {
                "kernel": str(e.get("kernel", "?"))[:100],
                "grid": [g for g in grid[:3] if type(g) is int],
                "int_kwargs": ints,
                # positional integers by place (None for any other argument): a constexpr passed positionally
                "int_args": [
                    a["int"] if isinstance(a, dict) and type(a.get("int")) is int else None for a in args[:64]
                ],
            }
        )
    return out
