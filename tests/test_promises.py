"""Every promise an exercise makes is tested by a case (issue 16, "promise audit").

Each exercise.toml lists its promises in `[promises]`: promise text -> substrings of the names of the cases
its contract generates that test it ("gpu:" = a case of a GPU check only, e.g. sizes the interpreter cannot
afford). A promise whose substring matches no case is a promise nothing checks.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from tritonlab.grading import contracts

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = sorted(ROOT.glob("course/*/exercises/*/exercise.toml"))


def case_names(exercise_id: str, backend: str) -> list[str]:
    contract = contracts.get(exercise_id)
    names: set[str] = set()
    for seed in (
        (1, 2) if backend == "interpreter" else (1,)
    ):  # some cases draw their shape at random: their fixed words are what a promise names
        names |= {c.name for c in contract.cases(np.random.default_rng(seed), backend)}
    return sorted(names)


def huge_names(exercise_id: str) -> list[str]:
    """The ≥ 2³¹-element cases of a GPU check with --huge (grading/huge.py), where the contract has them."""
    contract = contracts.get(exercise_id)
    if not hasattr(contract, "huge_cases"):
        return []
    return [c.name for c in contract.huge_cases(np.random.default_rng(1))]


def unkept(
    promises: dict[str, list[str]], interpreter: list[str], gpu: list[str], huge: list[str] | None = None
) -> list[str]:
    """`promise: tag` for every tag that matches no case of the backend it names ("huge:" = `check --huge`)."""
    missing = []
    for promise, tags in promises.items():
        if not tags:
            missing.append(f"{promise}: (no case listed)")
        for tag in tags:
            kind, _, rest = tag.partition(":") if tag.startswith(("gpu:", "huge:")) else ("", "", tag)
            names = {"gpu": gpu, "huge": huge or []}.get(kind, interpreter)
            text = rest
            if not any(text in name for name in names):
                missing.append(f"{promise}: {tag}")
    return missing


@pytest.mark.parametrize("path", EXERCISES, ids=lambda p: p.parent.name)
def test_every_promise_has_a_case(path: Path) -> None:
    promises = tomllib.loads(path.read_text(encoding="utf-8")).get("promises")
    assert isinstance(promises, dict) and promises, f"{path}: list the summary's promises in [promises]"
    exercise_id = path.parent.name
    missing = unkept(
        promises,
        case_names(exercise_id, "interpreter"),
        case_names(exercise_id, "gpu"),
        huge_names(exercise_id),
    )
    assert not missing, f"{exercise_id}: promises without a case: {missing}"


def test_a_promise_without_a_case_is_caught() -> None:
    names = ["n=1 float32", "2-D 3×4 float32"]
    assert unkept({"0-d to 3-d": ["0-d", "2-D"]}, names, names) == ["0-d to 3-d: 0-d"]
    assert unkept({"huge": ["gpu:n=2147483648"]}, names, names) == ["huge: gpu:n=2147483648"]
    assert unkept({"empty promise": []}, names, names) == ["empty promise: (no case listed)"]
    assert unkept({"huge": ["huge:n=2147"]}, names, names, ["huge: n=2147483650 float16"]) == []


# The 1-D exercises promise "any size": each has a case past 2³¹ elements (a GPU check with --huge).
ONE_D = ("vector-copy", "vector-add", "pid-map")


@pytest.mark.parametrize("exercise_id", ONE_D)
def test_one_dimensional_exercises_have_a_case_past_two_to_the_31(exercise_id: str) -> None:
    cases = contracts.get(exercise_id).huge_cases(np.random.default_rng(3))
    assert cases and all(c.extra["huge"]["n"] >= 2**31 for c in cases)
    for case in cases:  # generated on the device, never built as arrays in the parent
        assert not any(hasattr(a, "values") for a in case.args)
