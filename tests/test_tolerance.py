"""The rounding tolerance at the figure the course promises (docs/grader.md, "Tolerances"): an elementwise
exercise's output may differ from the exact result by one unit of rounding of its dtype,
|got − exact| ≤ 2u·|exact| (+ a dtype's smallest step near zero), and no more. A result 3 units off — between
1× and 10× the bound — fails as `wrong-result`; a result a quarter of a unit off passes.

The unit u comes from the dtype itself (numpy's eps / 2; bfloat16 keeps 8 significant bits), not from the
grader's tables, so a tolerance widened in `rounding_tol`, `UNIT_ROUNDOFF` or the comparison fails here. The
outputs judged are a real child's: the course's solution is checked once through the grader, its outputs
are moved by the test (rounded back into the dtype, as a kernel's store would), and the contract judges them.
A bfloat16 case, which this Triton's interpreter skips (its raw bf16 arithmetic is NaN), is judged on the
real output entry of the same-shape float16 case, re-labelled and refilled with bfloat16 bits."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tritonlab import config
from tritonlab.content.course import load_course
from tritonlab.grading import contracts
from tritonlab.grading.check import pipeline
from tritonlab.grading.check.cases import make_cases
from tritonlab.grading.check.judge import judge_case
from tritonlab.grading.check.read import output_budget, read_result
from tritonlab.grading.contracts import Case, Tensor
from tritonlab.runs import runfolder, sandbox

SEED = 9
# one unit of rounding, from the formats themselves: float32/float16 from numpy, bfloat16 has 8 significant bits
UNIT = {
    "float32": float(np.finfo(np.float32).eps) / 2,
    "float16": float(np.finfo(np.float16).eps) / 2,
    "bfloat16": 2.0**-8,
}
# the exercises graded at one unit of rounding (their contracts use contracts.rounding_tol(dtype, 1.0))
EXERCISES = {
    "vector-add": lambda case: case.args[0].values + case.args[1].values,
    "add-bias": lambda case: case.args[0].values + case.args[1].values[None, :],
}


def test_the_grader_tables_hold_the_formats_own_unit() -> None:
    assert {d: contracts.UNIT_ROUNDOFF[d] for d in UNIT} == UNIT


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """exercise id -> (cases, {case name: the solution's real result entry}), from one check each."""
    found: dict[str, tuple[list[Case], dict[str, dict]]] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        zygote = sandbox.Zygote("interpreter")
        try:
            zygote.wait_ready()
            course = load_course()
            for exercise_id in EXERCISES:
                exercise = course.exercise(exercise_id)
                verdict = pipeline.check(
                    exercise, exercise.solution, "interpreter", zygote, seed=SEED, keep_run_dir=True
                )
                assert verdict.passed, verdict.to_json()
                (run_dir,) = [p for p in config.runs_dir().glob("run-*") if (p / "result.json").exists()]
                cases = make_cases(contracts.get(exercise_id), SEED, "interpreter")
                try:
                    result = read_result(run_dir, output_budget(cases))
                finally:
                    runfolder.remove_run_dir(run_dir)
                found[exercise_id] = (cases, {e["name"]: e for e in result["cases"]})
        finally:
            zygote.close()
        yield found


def moved(expected: np.ndarray, dtype: str, units: float) -> np.ndarray:
    """The exact result moved away from zero by `units` units of rounding, then rounded into `dtype`: the bits
    a kernel would store."""
    target = expected * (1 + units * 2 * UNIT[dtype])
    return contracts.to_storage(target, dtype)


def error_in_units(expected: np.ndarray, bits: np.ndarray, dtype: str) -> float:
    """The worst |got − exact| of the stored bits, in units of the promised bound 2u·|exact|."""
    got = contracts.decode(bits, dtype).reshape(expected.shape)
    normal = np.abs(expected) > 1e-3  # where the relative bound is the whole bound
    return float(np.max(np.abs(got - expected)[normal] / (2 * UNIT[dtype] * np.abs(expected[normal]))))


def float_cases(cases: list[Case], dtype: str) -> list[Case]:
    return [
        c
        for c in cases
        if not c.expect_error
        and isinstance(c.args[0], Tensor)
        and c.args[0].dtype == dtype
        and c.args[0].values.size > 0
    ]


def entry_for(case: Case, entries: dict[str, dict], cases: list[Case]) -> dict:
    """A copy of the real output entry of this case, or (a case the interpreter skipped) of the same-shape
    case of another dtype, re-labelled with this case's dtype."""
    entry = entries[case.name]
    if entry.get("status") == "skipped":
        shape = case.args[0].values.shape
        twin = next(
            c.name
            for c in cases
            if c.args and isinstance(c.args[0], Tensor) and c.args[0].values.shape == shape
            if entries.get(c.name, {}).get("status") == "returned" and c.args[0].dtype == "float16"
        )
        entry = entries[twin]
    out = {**entry, "name": case.name, "outputs": [dict(o) for o in entry["outputs"]]}
    out["outputs"][0]["dtype"] = case.args[0].dtype
    return out


@pytest.mark.parametrize("dtype", list(UNIT))
@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_three_units_off_fails_and_a_quarter_unit_passes(real: dict, exercise_id: str, dtype: str) -> None:
    cases, entries = real[exercise_id]
    contract = contracts.get(exercise_id)
    chosen = float_cases(cases, dtype)
    assert chosen, f"{exercise_id} grades no {dtype} case"
    for case in chosen:
        expected = EXERCISES[exercise_id](case)
        entry = entry_for(case, entries, cases)
        for units, passes in ((3.0, False), (0.25, True)):
            bits = moved(expected, dtype, units)
            within = error_in_units(expected, bits, dtype)
            if passes:
                assert within <= 1, (case.name, within)  # the control really lies inside the bound
            else:
                assert 1 < within < 10, (case.name, within)  # between 1× and 10× the bound
            failures = judge_case(contract, case, {**entry, "arrays": [bits]})
            kinds = [f.kind for f in failures]
            assert kinds == ([] if passes else ["wrong-result"]), (case.name, units, failures)


SCALED_ADD = """
import torch
import triton
import triton.language as tl

UNITS = __UNITS__  # how far every sum is moved, in units of rounding of its dtype
# the unit's exponent: the kernel makes its scale from it (a float computed on the host and passed in would be
# a host-chosen value, which the replay refuses as host-computed: docs/grader.md "What the replay trusts")
EXPONENT = {torch.float32: -24, torch.float16: -11, torch.bfloat16: -8}


@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, EXP: tl.constexpr, BLOCK: tl.constexpr):
    scale = 1.0 + __UNITS__ * 2.0 * tl.exp2(tl.full((), EXP, tl.float32))
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, ((x + y) * scale).to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x, y):
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError("vector_add: x and y differ in shape, dtype or device")
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    if n:
        scaled_add_kernel[(triton.cdiv(n, 1024),)](
            x.contiguous(), y.contiguous(), out, n, EXP=EXPONENT[x.dtype], BLOCK=1024
        )
    return out
"""


def test_a_kernel_three_units_off_fails_every_float_case_as_a_wrong_result(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The same bound through a real kernel and the whole grader: a learner whose kernel moves every sum by 3
    units of rounding fails each float32 and float16 case of vector-add as `wrong-result`, and nothing else."""
    folder = tmp_path_factory.mktemp("scaled")
    learner = folder / "vector_add.py"
    learner.write_text(SCALED_ADD.replace("__UNITS__", "3.0"))
    exercise = load_course().exercise("vector-add")
    cases = make_cases(contracts.get("vector-add"), SEED, "interpreter")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(folder / "home"))
        zygote = sandbox.Zygote("interpreter")
        try:
            zygote.wait_ready()
            verdict = pipeline.check(exercise, learner, "interpreter", zygote, seed=SEED)
        finally:
            zygote.close()
    failed = {f.case for f in verdict.failures}
    assert {f.kind for f in verdict.failures} == {"wrong-result"}, verdict.to_json()["failures"]
    graded = {c.name for c in verdict.cases}
    wanted = {c.name for d in ("float32", "float16") for c in float_cases(cases, d) if c.name in graded}
    assert wanted and failed == wanted, (sorted(failed ^ wanted), verdict.to_json()["failures"])
