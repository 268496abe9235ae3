"""Step 2 of a check, `job`: the run directory the check child reads. A snapshot of the exact text being graded
(`submitted/NAME.py`), each case's tensors as `.npy` files and `job.json` naming them; nothing else.

`encode_arg` and `write_job` are also how the viz, profile and inspect runs hand a case to their children."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tritonlab.grading import contracts, huge
from tritonlab.grading.contracts import DEVICE, Case, Tensor
from tritonlab.models import Exercise, Failure, Verdict


def encode_arg(arg: object, case_index: int, arg_index: str, run_dir: Path) -> object:
    if isinstance(arg, huge.Generated):  # made on the device by the child (a huge case)
        return {"generated": arg.spec(), "label": f"input `{arg_index}`"}
    if isinstance(arg, Tensor):
        name = f"c{case_index}_a{arg_index}.npy"
        np.save(run_dir / name, contracts.to_storage(arg.values, arg.dtype), allow_pickle=False)
        return {"tensor": name, "dtype": arg.dtype, "layout": arg.layout, "label": f"input `{arg_index}`"}
    if arg is DEVICE:
        return {"device": True}
    return {"value": arg}


SNAPSHOT_DIR = "submitted"


def snapshot(run_dir: Path, file: Path, source: str) -> Path:
    """Write the exact text being graded into the run's own directory, under the learner's file name.

    The child imports this copy, never the workspace file: a save that lands while the check waits in the
    queue (or while the child starts) cannot change what this check grades."""
    folder = run_dir / SNAPSHOT_DIR
    folder.mkdir()
    copy = folder / file.name
    copy.write_bytes(source.encode("utf-8", errors="surrogateescape"))  # read_source's bytes, exactly
    return copy


def read_source(file: Path) -> str | None:
    """The learner's file as text, or None when it cannot be read (the child then reports the error)."""
    try:
        return Path(file).read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError:
        return None


def rename_in_verdict(verdict: Verdict, copy: Path, original: Path) -> None:
    """Name the learner's own file, not the run's snapshot of it, in every message of the verdict."""
    old, new = str(copy), str(original)

    def fix(text: str) -> str:
        return text.replace(old, new) if text else text

    verdict.failures = [
        Failure(f.case, f.kind, fix(f.message), fix(f.cause), fix(f.where)) for f in verdict.failures
    ]
    verdict.notes = [fix(n) for n in verdict.notes]
    verdict.output = fix(verdict.output)


def encode_case(case: Case, i: int, arg_names: list[str] | None, run_dir: Path) -> tuple[list, dict]:
    """A case's arguments as job specs, its tensors written as .npy files into `run_dir`."""
    names = arg_names or [str(j) for j in range(len(case.args))]
    args = [
        encode_arg(a, i, names[j] if j < len(names) else str(j), run_dir) for j, a in enumerate(case.args)
    ]
    kwargs = {k: encode_arg(v, i, k, run_dir) for k, v in case.kwargs.items()}
    return args, kwargs


def write_job(
    exercise: Exercise,
    file: Path,
    backend: str,
    cases: list[Case],
    run_dir: Path,
    arg_names: list[str] | None = None,
    search_dir: Path | None = None,
) -> None:
    job_cases = []
    for i, case in enumerate(cases):
        args, kwargs = encode_case(case, i, arg_names, run_dir)
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
    if search_dir is not None:  # where the learner's own modules live (the file itself is a snapshot)
        job["search_dir"] = str(search_dir)
    (run_dir / "job.json").write_text(json.dumps(job))
