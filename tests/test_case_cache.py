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
    cache = case_cache.CaseCache(budget=20_000)  # 1000 float64 = 8 kB a case set: two fit
    for seed in range(5):
        cache.get(("x", "gpu", seed), make)
    assert len(cache._entries) == 2 and ("x", "gpu", 4) in cache._entries
    big = cache.get(("x", "gpu", 99), lambda: make(100_000))  # too big to keep at all
    assert ("x", "gpu", 99) not in cache._entries and big[0].args[0].values.flags.writeable


def test_what_is_memoised_on_cached_cases_counts_against_the_budget() -> None:
    """References are memoised on a case after it went in (the judge fills them): the next insertion counts
    them, so three case sets of 8 kB with 16 kB of references each leave one beside the newest, not three."""
    cache = case_cache.CaseCache(budget=40_000)
    for seed in range(3):
        cases = cache.get(("x", "gpu", seed), make)
        cached(cases[0], "expected", lambda: np.zeros(2000))  # 16 kB of float64 reference
    assert cache.held() == 2 * 24_000 and len(cache._entries) == 2  # checked at the last insertion
    cache.get(("x", "gpu", 3), make)
    assert len(cache._entries) == 2 and cache.held() <= 40_000


def test_each_backend_has_its_own_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITONLAB_CASE_CACHE_MB", raising=False)
    assert case_cache.budget_bytes("interpreter") == 16 << 20 and case_cache.budget_bytes("gpu") == 2048 << 20
    monkeypatch.setenv("TRITONLAB_CASE_CACHE_MB", "7")
    assert case_cache.budget_bytes("interpreter") == case_cache.budget_bytes("gpu") == 7 << 20


def arrays_held(cache: case_cache.CaseCache) -> int:
    """Counted here, not by the cache: every distinct ndarray reachable from the cached cases."""
    seen: dict[int, int] = {}

    def walk(value: object) -> None:
        if isinstance(value, np.ndarray):
            seen[id(value)] = value.nbytes
        elif isinstance(value, Tensor):
            walk(value.values)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    for entry in list(cache._entries.values()):
        for case in entry[0] if isinstance(entry, tuple) else entry:  # (cases, size) before issue 34
            walk((case.args, case.kwargs, case.memo))
    return sum(seen.values())


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_the_cache_stays_flat_over_many_checks_of_different_seeds_and_exercises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 34: a server grew +0.88 MiB per check (a fresh seed each time, one entry each, under a 2 GiB
    budget). 120 checks' worth of real interpreter cases (7 exercises, a new seed each) with their references
    memoised as the judge does: what the cache holds stays under the interpreter budget (plus the references of
    the set judged last), and the process's RSS is flat once the cache is full."""
    import gc

    monkeypatch.delenv("TRITONLAB_CASE_CACHE_MB", raising=False)
    cache = case_cache.CaseCache()
    budget = case_cache.budget_bytes("interpreter")
    names = ("vector-copy", "softmax", "matmul", "persistent-matmul", "debug-rmsnorm", "matmul-bias")
    names += ("attention-forward",)
    largest, samples = 0, {}
    for i in range(120):
        name, seed = names[i % len(names)], 1000 + i
        contract = contracts.get(name)

        def make_them(contract=contract, seed=seed) -> list[Case]:  # noqa: ANN001
            return contract.cases(np.random.default_rng(seed), "interpreter")

        cases = cache.get((name, "interpreter", seed), make_them)
        prepare = getattr(contract, "prepare", None)
        for case in cases:  # what the judge memoises on the cases (grader.prepare_references)
            if prepare is not None and not case.expect_error:
                prepare(case)
        largest = max(largest, case_cache.held_bytes(cases))
        held = arrays_held(cache)
        assert held <= budget + largest, f"check {i}: the cache holds {held >> 20} MiB, budget {budget >> 20}"
        if i in (40, 119):
            gc.collect()
            samples[i] = rss_bytes()
    grown = samples[119] - samples[40]
    assert grown < 8 << 20, f"RSS grew {grown / 2**20:.1f} MiB over the last 80 checks"


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
