"""A check whose harness died underneath it is graded again, once; never blamed on the learner's code (issue 34).

A check is several runs of tritonlab's own harness: the learner's code in a child forked by the worker (the
zygote), then the replay of its launches and, for some exercises, the trusted compile, each in a child that
never imports the learner's file. When the worker dies under one of them, or a replay or compile child is
killed from outside (before each run had a PID namespace of its own, another learner's run could do either),
what failed is the harness, not the code: the check used to say `crash`, or `host-computed` for a correct
file. `check_retrying` grades once; when a run of it says so (`RunResult.harness_death`, runs/collect.py), it
grades again on a worker that is alive (the caller's `worker()` starts a new one when the last died), with the
same seed and text. When the harness dies under the retry too, nothing is graded: it raises
`executors.WorkerLost`, which the service answers with a `worker-lost` verdict that is not recorded, as it
does for a lost remote worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tritonlab import i18n
from tritonlab.models import Verdict
from tritonlab.runs.executor import WorkerLost


class _WatchedRun:
    """A run handle whose result is looked at for a harness death; everything else is the handle's."""

    def __init__(self, handle: Any, deaths: list[str]) -> None:
        self._handle, self._deaths = handle, deaths

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def wait(self, on_output: Callable[[str], None] | None = None) -> Any:
        result = self._handle.wait(on_output)
        if getattr(result, "harness_death", ""):
            self._deaths.append(result.harness_death)
        return result


class Watched:
    """A worker (sandbox.Zygote, or a remote pool) whose runs are watched for a harness death (`deaths`)."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker
        self.deaths: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.worker, name)

    def start(self, run_dir: Any, limits: Any) -> _WatchedRun:
        return _WatchedRun(self.worker.start(run_dir, limits), self.deaths)

    def fault(self, reason: str) -> None:
        """Something the parent verified, not the code, spoiled this attempt (pipeline.py: another run took the
        GPU's memory under it): grade again, as for a harness death."""
        self.deaths.append(reason)


def check_retrying(grade: Callable[[Any], Verdict], worker: Callable[[], Any], first: Any = None) -> Verdict:
    """`grade(worker)` once (on `first` when given, else on `worker()`); again on `worker()` when the harness
    died under the first (see the module's text). Raises WorkerLost when it died under both."""
    watched = Watched(first if first is not None else worker())
    verdict = grade(watched)
    if not watched.deaths:
        return verdict
    again = Watched(worker())
    verdict = grade(again)
    if again.deaths:
        raise WorkerLost(
            i18n.t("grader.retry_tritonlab_s_own_harness", deaths=watched.deaths[0], deaths2=again.deaths[0])
        )
    verdict.notes.append(i18n.t("grader.retry_checked_twice_tritonlab_s", deaths=watched.deaths[0]))
    verdict.timings["harness_retries"] = 1
    return verdict
