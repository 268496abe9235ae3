"""Per-seed case cache (grading/case_cache.py), memoised references, and the service's seed drawn ahead."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import LEARNERS

from tritonlab.grading import case_cache, contracts
from tritonlab.grading.contracts import Case, Tensor, cached
from tritonlab.service import Service


def make(n: int = 1000, counter: list | None = None) -> list[Case]:
    if counter is not None:
        counter.append(1)
        time.sleep(0.2)
    return [Case("c", (Tensor(np.ones(n), "float32"),))]


def test_same_seed_gives_the_same_cases_once() -> None:
    cache = case_cache.CaseCache(budget=1 << 20)
    made: list = []
    first = cache.get(("vector-copy", "gpu", 7), lambda: make(counter=made))
    again = cache.get(("vector-copy", "gpu", 7), lambda: make(counter=made))
    other = cache.get(("vector-copy", "gpu", 8), lambda: make(counter=made))
    assert first is again and other is not first and len(made) == 2
    assert cache.hits == 1 and cache.misses == 2
    with pytest.raises(ValueError):
        first[0].args[0].values[0] = 5.0  # read-only: nothing can spoil the next check's cases


def test_concurrent_requests_make_the_cases_once() -> None:
    cache = case_cache.CaseCache(budget=1 << 20)
    made: list = []
    threads = [
        threading.Thread(target=cache.get, args=(("softmax", "gpu", 1), lambda: make(counter=made)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1


def test_budget_evicts_the_least_recently_used() -> None:
    cache = case_cache.CaseCache(budget=40_000)  # 1000 float64 = 8 kB, counted twice with references
    for seed in range(5):
        cache.get(("x", "gpu", seed), make)
    assert len(cache._entries) == 2 and ("x", "gpu", 4) in cache._entries
    big = cache.get(("x", "gpu", 99), lambda: make(100_000))  # too big to keep at all
    assert ("x", "gpu", 99) not in cache._entries and big[0].args[0].values.flags.writeable


def test_references_are_memoised_on_the_case() -> None:
    case = make()[0]
    calls: list = []
    for _ in range(3):
        cached(case, "expected", lambda: calls.append(1) or 42)
    assert calls == [1] and case.memo["expected"] == 42


def test_matmul_check_reuses_its_reference() -> None:
    contract = contracts.get("matmul")
    case = contract.cases(np.random.default_rng(3), "interpreter")[0]
    contract.check(case, {})
    expected = case.memo["expected"]
    contract.check(case, {})
    assert case.memo["expected"] is expected


def test_service_draws_the_next_seed_ahead(home: Path, fixture_course: Path) -> None:
    service = Service(course_dir=fixture_course, workspace_dir=home / "ws", backend="interpreter")
    service.prefetch_cases = True
    try:
        exercise = service.exercise("vector-copy")
        service.check(exercise, file=LEARNERS / "good.py", record=False)
        seed = service._next_seed["vector-copy"]
        deadline = time.monotonic() + 10
        while ("vector-copy", "interpreter", seed) not in case_cache.CASES._entries:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        hits = case_cache.CASES.hits
        verdict = service.check(exercise, file=LEARNERS / "good.py", record=False)
        assert verdict.seed == seed and verdict.passed and case_cache.CASES.hits == hits + 1
    finally:
        service.close()
