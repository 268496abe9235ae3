"""The byte caps on what the parent reads from a run directory, at the figures a user is promised, through the
real grader and a real child: a learner file whose own process pads the harness's files to an exact size.

Promised (docs/reliability.md, "What the parent reads from a run"; docs/grader.md §3): `result.json` at most
16 MiB, a case's launch record at most 8 MiB, output arrays at most max(64 MiB, 4 × the inputs) per check.
Each test states the figure itself, never the constant that implements it, so a raised cap fails here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tritonlab.content.course import load_course
from tritonlab.grading import contracts
from tritonlab.grading.check import pipeline
from tritonlab.grading.check.cases import make_cases
from tritonlab.grading.check.read import output_budget, read_result
from tritonlab.models import Exercise, Verdict
from tritonlab.runs import rundir, sandbox

MiB = 1 << 20
RESULT_CAP = 16 * MiB  # result.json
RECORD_CAP = 8 * MiB  # one case's launch record (c{i}_launches.json)
OUTPUT_BUDGET = 64 * MiB  # output arrays of one check whose inputs are small
SEED = 5

# Prepended to the course's own solution: the learner's process rewrites one file the harness writes, as JSON
# that is still valid (one more key, "pad"), exactly `SIZE` bytes long.
PAD = """
import pathlib as _pathlib
import re as _re

_write_text = _pathlib.Path.write_text


def _padded(self, data, *args, **kwargs):
    if _re.fullmatch(__NAME__, self.name):
        room = __SIZE__ - len(data.encode()) - len(', "pad": ""')
        data = data[:-1] + ', "pad": "' + "x" * room + '"}'
    return _write_text(self, data, *args, **kwargs)


_pathlib.Path.write_text = _padded
"""


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        z = sandbox.Zygote("interpreter")
        z.wait_ready()
        yield z
        z.close()


def vector_copy() -> Exercise:
    return load_course().exercise("vector-copy")


def padded_learner(tmp_path: Path, name_pattern: str, size: int) -> Path:
    exercise = vector_copy()
    path = tmp_path / f"padded_{size}.py"
    prelude = PAD.replace("__NAME__", repr(name_pattern)).replace("__SIZE__", str(size))
    path.write_text(prelude + exercise.solution.read_text())
    return path


def check(path: Path, zygote: sandbox.Zygote) -> Verdict:
    return pipeline.check(vector_copy(), path, "interpreter", zygote, seed=SEED, timeout=120)


def case_names() -> list[str]:
    return [c.name for c in make_cases(contracts.get("vector-copy"), SEED, "interpreter")]


def test_result_json_is_read_up_to_16_mib_and_refused_one_byte_past(
    tmp_path: Path, zygote: sandbox.Zygote
) -> None:
    at_cap = check(padded_learner(tmp_path, r"result\.json", RESULT_CAP), zygote)
    assert at_cap.passed, at_cap.to_json()  # the control: a valid 16 MiB result is read and judged
    over = check(padded_learner(tmp_path, r"result\.json", RESULT_CAP + 1), zygote)
    assert not over.passed
    assert [(f.case, f.kind) for f in over.failures] == [("result", "crash")], over.to_json()
    message = over.failures[0].message
    assert message.startswith("the run wrote malformed results: "), message
    assert f"result.json is {RESULT_CAP + 1} bytes (at most {RESULT_CAP})" in message
    assert [c.name for c in over.cases] == case_names() and not any(c.passed for c in over.cases)


def test_a_launch_record_is_read_up_to_8_mib_and_refused_one_byte_past(
    tmp_path: Path, zygote: sandbox.Zygote
) -> None:
    """Only the first case's record is padded: the cap is per case, and every other case still passes."""
    names = case_names()
    at_cap = check(padded_learner(tmp_path, r"c0_launches\.json", RECORD_CAP), zygote)
    assert at_cap.passed, at_cap.to_json()
    over = check(padded_learner(tmp_path, r"c0_launches\.json", RECORD_CAP + 1), zygote)
    assert not over.passed
    assert {f.case for f in over.failures} == {names[0]}, over.to_json()
    assert any("the launch record is too large" in f.message for f in over.failures), over.to_json()
    assert [c.name for c in over.cases if not c.passed] == [names[0]]
    assert len(over.cases) == len(names)


def sparse_npy(path: Path, elements: int) -> None:
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (elements,)}
        )
        f.truncate(f.tell() + 4 * elements)


def test_output_arrays_are_read_up_to_64_mib_per_check_and_refused_past(tmp_path: Path) -> None:
    """The parent's reader (read_result) on a run directory holding what a hostile run could leave: two
    outputs that together fill the budget exactly, then one element more."""
    cases = make_cases(contracts.get("vector-copy"), SEED, "interpreter")
    assert output_budget(cases) == OUTPUT_BUDGET  # small inputs: the promised floor
    half = OUTPUT_BUDGET // 8  # float32 elements in half the budget
    for extra, fits in ((0, True), (1, False)):
        run = tmp_path / f"run{extra}"
        run.mkdir()
        sparse_npy(run / "a.npy", half)
        sparse_npy(run / "b.npy", half + extra)
        outputs = [
            {"file": "a.npy", "dtype": "float32", "shape": [half]},
            {"file": "b.npy", "dtype": "float32", "shape": [half + extra]},
        ]
        (run / "result.json").write_text(json.dumps({"cases": [{"name": "c", "outputs": outputs}]}))
        if fits:
            arrays = read_result(run, output_budget(cases))["cases"][0]["arrays"]
            assert sum(a.nbytes for a in arrays) == OUTPUT_BUDGET
        else:
            with pytest.raises(rundir.Malformed, match=f"may return {OUTPUT_BUDGET} bytes in all"):
                read_result(run, output_budget(cases))


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint8", "int16", "uint32", "float32", "uint64", "float64"]
)
def test_an_output_of_another_element_width_than_declared_is_refused(tmp_path: Path, dtype: str) -> None:
    """Every dtype a result may declare has its element width checked against the file: an output declared as
    `dtype` whose .npy holds elements of another width (here the next width up) is malformed, never read as
    something else. (Until the check pipeline's split, a second, smaller width table in the same module hid
    the first one, so bool, int8, uint8, uint32 and uint64 outputs were read at whatever width they held.)"""
    width = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint32": 4, "float32": 4, "uint64": 8}.get(
        dtype, 8
    )
    wrong = {1: np.int16, 2: np.int32, 4: np.int64, 8: np.int32}[width]
    np.save(tmp_path / "o.npy", np.zeros(4, dtype=wrong), allow_pickle=False)
    outputs = [{"file": "o.npy", "dtype": dtype, "shape": [4]}]
    (tmp_path / "result.json").write_text(json.dumps({"cases": [{"name": "c", "outputs": outputs}]}))
    with pytest.raises(rundir.Malformed, match=f"expected {width}"):
        read_result(tmp_path)
