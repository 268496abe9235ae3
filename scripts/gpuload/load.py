"""The load of scripts/load_gpu.py: log the learners in, the warm-up checks, then the plan's checks, each to a
learner whose last job has ended (a classroom admits one job per learner), at a rate or closed loop, within a
deadline; and every submitted check's record gathered once the server is stopped."""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import time

from gpuload import plan as workload


class Deadline:
    """The whole run's bound (--max-seconds), from its start."""

    def __init__(self, seconds: float) -> None:
        self.started = time.monotonic()
        self.at = self.started + seconds

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def passed(self) -> bool:
        return time.monotonic() >= self.at


def log_in(learners: list, deadline: Deadline) -> float:
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(learners))) as pool:
        list(pool.map(lambda ln: ln.login(), learners, timeout=max(1.0, deadline.left())))
    return time.monotonic() - started


def warm_up(learner: object, items: list, deadline: Deadline) -> list[dict]:
    out = []
    for item in items:
        record = learner.check(item, read_timeout=max(1.0, deadline.left()))  # type: ignore[attr-defined]
        out.append({k: record.get(k) for k in ("exercise", "passed", "latency_s", "error")})
    return out


class Load:
    """Submit the plan's items (at `rate` a minute, or closed loop), each to a learner whose last job has
    ended, until the plan or the deadline ends; `run` then waits for the checks in flight until the deadline.
    `collect`, after the server is stopped, gathers every submitted check's record: one that never answered is
    unfinished."""

    def __init__(self, learners: list, rate: float, deadline: Deadline, stop: threading.Event) -> None:
        self.rate, self.deadline, self.stop = rate, deadline, stop
        self.idle: queue.Queue = queue.Queue()
        for learner in learners:
            self.idle.put(learner)
        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=len(learners), thread_name_prefix="learner"
        )
        self.futures: dict[concurrent.futures.Future, list[workload.Item]] = {}

    def one(self, learner: object, items: list[workload.Item]) -> list[dict]:
        """The checks of one submission (one item, or a `rechecks` group), one after the other, by `learner`."""
        records = []
        try:
            for item in items:
                try:
                    record = learner.check(item, read_timeout=max(1.0, self.deadline.left()))  # type: ignore[attr-defined]
                except Exception as exc:  # noqa: BLE001 - a learner that broke is a result too
                    record = stub(item) | {
                        "error": f"{type(exc).__name__}: {exc}"[:300],
                        "unfinished": self.stop.is_set(),
                    }
                records.append(record)
                if self.stop.is_set():
                    break
        finally:
            self.idle.put(learner)
        return records

    def run(self, items: list[workload.Item]) -> None:
        began = time.monotonic()
        submissions: list[list[workload.Item]] = []
        for item in items:  # a group's checks (plan.build's rechecks) are one learner's, in order
            if submissions and item.group >= 0 and submissions[-1][0].group == item.group:
                submissions[-1].append(item)
            else:
                submissions.append([item])
        try:
            for batch in submissions:
                i = batch[0].index
                if self.rate:
                    due = began + 60.0 * i / self.rate
                    if self.stop.wait(max(0.0, min(due - time.monotonic(), self.deadline.left()))):
                        break
                try:
                    learner = self.idle.get(timeout=max(0.01, self.deadline.left()))
                except queue.Empty:
                    break
                if self.deadline.passed():
                    self.idle.put(learner)
                    break
                self.futures[self.pool.submit(self.one, learner, batch)] = batch
            concurrent.futures.wait(list(self.futures), timeout=self.deadline.left())
        finally:
            self.stop.set()  # from here a broken stream is the run's end, not an error

    def collect(self, wait_s: float = 30.0) -> list[dict]:
        self.stop.set()
        concurrent.futures.wait(list(self.futures), timeout=wait_s)
        records = []
        for future, batch in self.futures.items():
            done = future.result() if future.done() else []
            records += done
            records += [  # a group cut short: the checks it never sent or never heard back from
                stub(item) | {"unfinished": True, "error": "no answer after the server stopped"}
                for item in batch[len(done) :]
            ]
        self.pool.shutdown(wait=False, cancel_futures=True)
        return sorted(records, key=lambda r: r["index"])


def stub(item: workload.Item) -> dict:
    return {"index": item.index, "exercise": item.exercise, "kind": item.kind, "file": item.file}
