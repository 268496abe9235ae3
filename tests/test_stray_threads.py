"""The harness's check for threads a learner's function leaves running (grading/guards.stray_threads), in
process: a library's monitor thread started during the call (tqdm's, which torch.compile's Inductor starts) is
not the learner's; a thread the learner starts, or one that only looks like tqdm's, is counted."""

from __future__ import annotations

import threading
import time

import pytest

from tritonlab.grading import guards

tqdm_monitor = pytest.importorskip("tqdm._monitor")


def _started(make) -> list[str]:  # noqa: ANN001 - a factory that makes and starts the thread
    before = {t.ident for t in threading.enumerate()}
    thread = make()
    if not thread.is_alive():
        thread.start()
    try:
        return [n for n in guards.stray_threads(before) if n == thread.name]
    finally:
        if isinstance(thread, tqdm_monitor.TMonitor):
            thread.exit()
        thread.join(timeout=5)


def test_tqdms_monitor_thread_is_not_the_learners() -> None:
    class Owner:  # what TMonitor watches: the tqdm class's instances
        _instances: set = set()

    assert _started(lambda: tqdm_monitor.TMonitor(Owner, 10)) == []  # TMonitor starts itself


def test_a_learners_thread_is_counted_even_named_like_tqdms() -> None:
    stop = threading.Event()
    made = lambda: threading.Thread(target=stop.wait, args=(1.0,), name="tqdm_monitor")  # noqa: E731
    assert _started(made) == ["tqdm_monitor"]
    stop.set()


def test_a_subclass_of_tqdms_monitor_that_runs_other_code_is_counted() -> None:
    class Sneaky(tqdm_monitor.TMonitor):
        def run(self) -> None:  # the learner's code, not tqdm's monitor loop
            time.sleep(0.5)

    class Owner:
        _instances: set = set()

    assert _started(lambda: Sneaky(Owner, 10)) != []
