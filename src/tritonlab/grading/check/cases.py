"""Step 1 of a check, `cases`: the contract's cases for a seed (numpy only), made once per (exercise, backend,
seed) and kept in `case_cache.CASES`, with their float64 references made ahead where the contract can."""

from __future__ import annotations

import dataclasses

import numpy as np

from tritonlab.grading import case_cache
from tritonlab.grading.contracts import Case


def make_cases(contract: object, seed: int, backend: str, huge_cases: bool = False) -> list[Case]:
    """The contract's cases; with `huge_cases` (a GPU check only) also its ≥ 2³¹-element ones (grading/huge.py)."""
    rng = np.random.default_rng(seed)
    cases = contract.cases(rng, backend)
    if huge_cases and hasattr(contract, "huge_cases"):
        cases += contract.huge_cases(rng)
    return unique_names(cases)


def unique_names(cases: list[Case]) -> list[Case]:
    """Results, replays and verdicts name cases: two of one name would be judged as one. A size drawn from the
    seed can equal one of the fixed sizes (occupancy's 40009 for seed 7777): the later case is named again
    with its place, "n=40009 float32 (case 7)". (A contract whose fixed cases share a name fails
    tests/test_contracts.py::test_case_plans_are_sound.)"""
    seen = {c.name for c in cases}
    if len(seen) == len(cases):
        return cases
    named: set[str] = set()
    out = []
    for index, case in enumerate(cases, 1):
        if case.name in named:
            case = dataclasses.replace(case, name=f"{case.name} (case {index})")
        named.add(case.name)
        out.append(case)
    return out


def prepare_references(contract: object, cases: list[Case]) -> None:
    """Make the float64 references and tolerances of these cases now (the contract's `prepare`, memoised on
    each case): called beside the next seed's cases, so that judging them later only compares."""
    prepare = getattr(contract, "prepare", None)
    if prepare is None:
        return
    for case in cases:
        if case.expect_error or case.extra.get("huge"):
            continue
        try:
            prepare(case)
        except Exception:  # noqa: BLE001 - the judge computes it again and reports what is wrong there
            return


def cases(
    contract: object, exercise_id: str, backend: str, seed: int, huge_cases: bool = False
) -> list[Case]:
    """The check's cases: from the cache when they were made ahead (the next seed, or while the check waited
    in the queue), else made now."""
    key = (exercise_id, backend, seed) + (("huge",) if huge_cases else ())
    return case_cache.CASES.get(key, lambda: make_cases(contract, seed, backend, huge_cases))
