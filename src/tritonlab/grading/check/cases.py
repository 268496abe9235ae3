"""Step 1 of a check, `cases`: the contract's cases for a seed (numpy only), made once per (exercise, backend,
seed) and kept in `case_cache.CASES`, with their float64 references made ahead where the contract can."""

from __future__ import annotations

import numpy as np

from tritonlab.grading import case_cache
from tritonlab.grading.contracts import Case


def make_cases(contract: object, seed: int, backend: str, huge_cases: bool = False) -> list[Case]:
    """The contract's cases; with `huge_cases` (a GPU check only) also its ≥ 2³¹-element ones (grading/huge.py)."""
    rng = np.random.default_rng(seed)
    cases = contract.cases(rng, backend)
    if huge_cases and hasattr(contract, "huge_cases"):
        cases += contract.huge_cases(rng)
    seen: set[str] = set()
    for case in cases:  # results, replays and verdicts name cases: two of one name would be judged as one
        if case.name in seen:
            raise ValueError(f"{getattr(contract, '__name__', contract)}: two cases are named {case.name!r}")
        seen.add(case.name)
    return cases


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
