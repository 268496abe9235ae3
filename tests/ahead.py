"""Work of a parametrized test started ahead of its tests, a few cases at a time.

Some parametrized tests each wait on one child process that keeps one core busy: a check through the sandbox
(tests/test_wrong_solutions.py), an example run in a fresh interpreter (tests/test_content.py). One at a time
they leave the other core of CI's two idle while pytest's own process only waits. A module-scoped fixture
built with `Ahead` submits every selected case's work to a small thread pool, in the tests' order, and each
test waits for its own case's result: the same work as before, each test asserting on its own result, with
an exception the work raised raised again in that test alone. At most `workers` cases run at once, and the
cases of earlier tests have finished before a test begins waiting, so no test waits for more than `workers`
cases. Measured on the 2-core development machine, otherwise idle, one at a time then two at a time: the
wrong files 197 s -> 115 s, the right files 102 s -> 61 s, tests/test_content.py 161 s -> 95 s (one at a
time, each child used one core and pytest's process next to nothing).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

import pytest

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")

# Two at a time on CI's two cores; more only where there are more cores to fill.
AT_ONCE = max(2, min(4, (os.cpu_count() or 1) // 2))


def selected(request: pytest.FixtureRequest, test: str, param: str) -> list:
    """The values of `param` this session runs `test` of, in the tests' order (all of them, or those `-k`
    and the marks left)."""
    return [
        item.callspec.params[param]
        for item in request.session.items
        if getattr(item, "originalname", "") == test and getattr(item, "module", None) is request.module
    ]


class Ahead(Generic[K, R]):
    """`work(key)` for every key, `workers` at a time, started now in the keys' order."""

    def __init__(self, work: Callable[[K], R], keys: list[K], workers: int = AT_ONCE) -> None:
        self._work = work
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="ahead")
        self._futures: dict[K, Future[R]] = {key: self._pool.submit(work, key) for key in dict.fromkeys(keys)}

    def result(self, key: K) -> R:
        """The key's result (its exception raised again); a key that was not started ahead is worked now."""
        future = self._futures.get(key)
        return self._work(key) if future is None else future.result()

    def close(self) -> None:
        """Cancel what has not started (a session stopped early) and wait for what has."""
        self._pool.shutdown(wait=True, cancel_futures=True)
