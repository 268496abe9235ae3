"""Parent side: the cases of a check, kept per (exercise, backend, seed) so a repeated check skips making them.

On a GPU a check's cases are large (up to ~770 MB of float64 for matmul-bias) and making them costs seconds of
the parent's CPU (random values, rounding to the dtype); their float64 references and error bounds cost more
at judging time. Both depend only on (exercise, backend, seed): the contract is deterministic given the seed.
So a process that checks the same seed again (`check --seed N` in a server, `dev check`, a web re-check that
replays a seed, the GPU verification's repeated checks) reuses the same Case objects, and with them the
references memoised on each case (`contracts.cached`).

In memory only, bounded by bytes (TRITONLAB_CASE_CACHE_MB, default 2048; 0 turns it off), least recently
used first out. Nothing is written to disk: a file the learner's runs could reach must never feed the judge.
Cached arrays are made read-only, so code that tried to change a case in place would fail loudly instead of
spoiling the next check.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from tritonlab.grading.contracts import Case, Tensor

Key = tuple  # (exercise, backend, seed), plus "huge" for a check with the huge cases


def budget_bytes() -> int:
    value = os.environ.get("TRITONLAB_CASE_CACHE_MB", "").strip()
    return (int(value) if value.isdigit() else 2048) << 20


def case_bytes(cases: list[Case]) -> int:
    total = 0
    for case in cases:
        for arg in (*case.args, *case.kwargs.values()):
            if isinstance(arg, Tensor):
                total += arg.values.nbytes
    return total


def freeze(cases: list[Case]) -> None:
    for case in cases:
        for arg in (*case.args, *case.kwargs.values()):
            if isinstance(arg, Tensor) and isinstance(arg.values, np.ndarray):
                arg.values.flags.writeable = False


class CaseCache:
    def __init__(self, budget: int | None = None) -> None:
        self.budget = budget_bytes() if budget is None else budget
        self._entries: OrderedDict[Key, tuple[list[Case], int]] = OrderedDict()
        self._lock = threading.Lock()
        self._making: dict[Key, threading.Lock] = {}
        self.hits = self.misses = 0

    def get(self, key: Key, make: Callable[[], list[Case]]) -> list[Case]:
        with self._lock:
            making = self._making.setdefault(key, threading.Lock())
        with making:  # one maker per key: a check arriving while the cases are prefetched waits for them
            try:
                return self._get(key, make)
            finally:
                with self._lock:
                    self._making.pop(key, None)

    def _get(self, key: Key, make: Callable[[], list[Case]]) -> list[Case]:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[0]
            self.misses += 1
        cases = make()
        size = case_bytes(cases)
        if size * 2 > self.budget:  # references roughly double it: too big to keep next to others
            return cases
        freeze(cases)
        with self._lock:
            self._entries[key] = (cases, size)
            while sum(s * 2 for _, s in self._entries.values()) > self.budget and len(self._entries) > 1:
                self._entries.popitem(last=False)
        return cases

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


CASES = CaseCache()
