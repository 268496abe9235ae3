"""Every case a contract makes is run and judged, the last one too: a learner file that is right on every case
but the last fails, the failure names that case, and the verdict lists exactly the contract's cases.

The wrong file is the course's own solution with its host function wrapped: the wrapper compares the call's
arguments (shapes, dtypes, strides, plain values) with the last case's, read from the contract at test time,
and only there returns a wrong answer (outputs zeroed after the real kernel ran, or a return where the case
expects an error). The case list comes from `contract.cases` itself, never from the grader, so a grader that
drops a case cannot hide it from this test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tritonlab.content.course import load_course
from tritonlab.grading import contracts
from tritonlab.grading.check import pipeline
from tritonlab.grading.contracts import DEVICE, Case, Tensor, layout_geometry
from tritonlab.runs import sandbox

SEED = 5
BACKEND = "interpreter"
# Exercises whose last case runs on the interpreter (a bf16-arithmetic case is a GPU case there), over the
# kinds of last case the course has: a layout (storage offset, padded rows, a strided second input), a dtype
# (float16, bfloat16 without arithmetic), an expected error (vector-add raises ValueError), two outputs.
EXERCISES = ("vector-copy", "vector-add", "copy-2d", "add-bias", "row-reduce")

WRAPPER = """

# ---- wrong on the last case only (tests/test_grader_cases.py) ----
import torch as _torch

_right = {function}
_LAST = {last!r}


def _signature(value):
    if isinstance(value, _torch.Tensor):
        return ("T", tuple(value.shape), str(value.dtype).split(".")[-1], tuple(value.stride()))
    return repr(value)


def {function}(*args, **kwargs):
    call = (tuple(_signature(a) for a in args), tuple(sorted((k, _signature(v)) for k, v in kwargs.items())))
    if call != _LAST:
        return _right(*args, **kwargs)
    try:
        out = _right(*args, **kwargs)
    except Exception:
        return _torch.zeros(1)  # the case expects an error: return instead of raising it
    for tensor in out if isinstance(out, (tuple, list)) else (out,):
        tensor.zero_()
    return out
"""


def signature(value: object) -> object:
    """What the wrapper sees of one argument in the child, computed from the case's own spec."""
    if isinstance(value, Tensor):
        shape = tuple(int(d) for d in value.values.shape)
        strides = layout_geometry(shape, value.layout)[0]
        return ("T", shape, value.dtype, tuple(int(s) for s in strides))
    if value is DEVICE:
        return repr("cpu")
    return repr(value)


def case_signature(case: Case) -> tuple:
    kwargs = tuple(sorted((k, signature(v)) for k, v in case.kwargs.items()))
    return (tuple(signature(a) for a in case.args), kwargs)


def contract_cases(exercise_id: str) -> list[Case]:
    """The cases the contract makes for the grader's seed (make_cases draws them the same way)."""
    return contracts.get(exercise_id).cases(np.random.default_rng(SEED), BACKEND)


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        z = sandbox.Zygote(BACKEND)
        z.wait_ready()
        yield z
        z.close()


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_a_file_wrong_only_on_the_last_case_fails_naming_it(
    exercise_id: str, tmp_path: Path, zygote: sandbox.Zygote
) -> None:
    exercise = load_course().exercise(exercise_id)
    cases = contract_cases(exercise_id)
    last = cases[-1]
    signatures = [case_signature(c) for c in cases]
    assert signatures.count(signatures[-1]) == 1, f"{exercise_id}: the last case's arguments are not unique"
    assert not last.extra.get("bf16_arithmetic"), f"{exercise_id}: its last case runs on a GPU only"

    wrong = tmp_path / f"{exercise.function}.py"
    wrong.write_text(
        exercise.solution.read_text() + WRAPPER.format(function=exercise.function, last=signatures[-1])
    )
    verdict = pipeline.check(exercise, wrong, BACKEND, zygote, seed=SEED, timeout=180)

    # none dropped: every case the contract made, in order, is judged, except a bf16-arithmetic case that this
    # backend skips, which the verdict names in its notes
    skipped = [
        n.removeprefix("skipped ").split(": ", 1)[0] for n in verdict.notes if n.startswith("skipped ")
    ]
    assert all(c.extra.get("bf16_arithmetic") for c in cases if c.name in skipped), verdict.notes
    judged = [c.name for c in cases if c.name not in skipped]
    assert [c.name for c in verdict.cases] == judged, verdict.to_json()["cases"]
    # the last case, and only it, fails, and the failures say which case it was
    assert not verdict.passed
    assert [c.name for c in verdict.cases if not c.passed] == [last.name], verdict.to_json()
    assert verdict.failures and {f.case for f in verdict.failures} == {last.name}, verdict.to_json()
    wanted = {"missing-validation"} if last.expect_error else {"wrong-result"}
    assert wanted <= {f.kind for f in verdict.failures}, verdict.to_json()["failures"]
