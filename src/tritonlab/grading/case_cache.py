"""Parent side: the cases of a check, kept per (exercise, backend, seed) so a repeated check skips making them.

On a GPU a check's cases are large (up to ~770 MB of float64 for matmul-bias) and making them costs seconds of
the parent's CPU (random values, rounding to the dtype); their float64 references and error bounds cost more
at judging time. Both depend only on (exercise, backend, seed): the contract is deterministic given the seed.
So a process that checks the same seed again (`check --seed N` in a server, `dev check`, a web re-check that
replays a seed, the GPU verification's repeated checks) reuses the same Case objects, and with them the
references memoised on each case (`contracts.cached`).

In memory only, bounded by the bytes it really holds: every array of the cases and every array memoised on
them (references, error bounds: up to 3.4 times the inputs for persistent-matmul), counted again at each
insertion, since the judge fills the memo after the cases went in; least recently used first out. The budget is
per backend: 2048 MiB for GPU cases (large, and dear to make), 16 MiB on the interpreter, where a case set
holds 0.2-5.7 MiB and takes at most a second to make, and where every web check draws a fresh seed, so that
an entry is rarely used twice (a class's checks would otherwise grow the server by each check's cases until a
GPU-sized budget filled: +0.88 MiB per check, issue 34). TRITONLAB_CASE_CACHE_MB sets one figure for both (0
turns the cache off). Between two insertions the entry being judged may add its references on top of the
budget (at most one case set's memo). Nothing is written to disk: a file the learner's runs could reach must
never feed the judge. Cached arrays are made read-only, so code that tried to change a case in place would
fail loudly instead of spoiling the next check.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from tritonlab.grading.contracts import Case, Tensor

Key = tuple  # (exercise, backend, seed), plus "huge" for a check with the huge cases


DEFAULT_MB = {"gpu": 2048, "interpreter": 16}


def budget_bytes(backend: str = "gpu") -> int:
    """The budget for `backend`'s cases: TRITONLAB_CASE_CACHE_MB when set, else DEFAULT_MB."""
    value = os.environ.get("TRITONLAB_CASE_CACHE_MB", "").strip()
    return (int(value) if value.isdigit() else DEFAULT_MB.get(backend, DEFAULT_MB["gpu"])) << 20


def case_bytes(cases: list[Case]) -> int:
    """The bytes of the cases' input arrays."""
    total = 0
    for case in cases:
        for arg in (*case.args, *case.kwargs.values()):
            if isinstance(arg, Tensor):
                total += arg.values.nbytes
    return total


def held_bytes(cases: list[Case]) -> int:
    """Every byte of array data the cases hold: their inputs and whatever is memoised on them (arrays inside
    dicts, lists and tuples, each counted once)."""
    seen: set[int] = set()

    def walk(value: object, depth: int = 0) -> int:
        if id(value) in seen or depth > 8:
            return 0
        seen.add(id(value))
        if isinstance(value, np.ndarray):
            return value.nbytes
        if isinstance(value, Tensor):
            return walk(value.values, depth + 1)
        if isinstance(value, dict):
            return sum(walk(v, depth + 1) for v in value.values())
        if isinstance(value, (list, tuple)):
            return sum(walk(v, depth + 1) for v in value)
        return 0

    return sum(walk(case.args) + walk(case.kwargs) + walk(case.memo) for case in cases)


def freeze(cases: list[Case]) -> None:
    for case in cases:
        for arg in (*case.args, *case.kwargs.values()):
            if isinstance(arg, Tensor) and isinstance(arg.values, np.ndarray):
                arg.values.flags.writeable = False


class CaseCache:
    """`budget`: one figure for every backend (tests); by default each backend's `budget_bytes`."""

    def __init__(self, budget: int | None = None) -> None:
        self._budget = budget
        self.budget = budget_bytes() if budget is None else budget  # > 0: the cache is on
        self._entries: OrderedDict[Key, list[Case]] = OrderedDict()
        self._lock = threading.Lock()
        self._making: dict[Key, threading.Lock] = {}
        self.hits = self.misses = 0

    def budget_for(self, backend: str) -> int:
        return budget_bytes(backend) if self._budget is None else self._budget

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
                return entry
            self.misses += 1
        cases = make()
        budget = self.budget_for(str(key[1]) if len(key) > 1 else "gpu")
        if case_bytes(cases) * 2 > budget:  # references roughly double it: too big to keep next to others
            return cases
        freeze(cases)
        with self._lock:
            self._entries[key] = cases
            self._trim(key[1] if len(key) > 1 else None, budget)
        return cases

    def _trim(self, backend: object, budget: int) -> None:
        """Drop `backend`'s least recently used entries until what they hold now (memos included) fits."""
        mine = [k for k in self._entries if (k[1] if len(k) > 1 else None) == backend]
        sizes = {k: held_bytes(self._entries[k]) for k in mine}
        total = sum(sizes.values())
        for k in mine[:-1]:  # oldest first; the newest stays (it fit on its own)
            if total <= budget:
                break
            total -= sizes[k]
            del self._entries[k]

    def held(self) -> int:
        """Bytes of array data the cache holds now, memos included."""
        with self._lock:
            return sum(held_bytes(cases) for cases in self._entries.values())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


CASES = CaseCache()
