"""Several runs per cluster worker (issue 37), the pool's side without a cluster: driver.RayPool's
acquire/release/forget with the slot rules of ray_executor/slots.py, driven by real threads.

A worker takes as many runs at once as its self-check's `slots`; the pool's capacity is their sum; a run whose
job times the GPU (runs/capacity.py: TIMING_MODES) has its worker alone — it waits for the runs in flight to
end, takes no neighbour while it runs, and the worker it waits for takes no new run meanwhile; the least loaded
worker is chosen first; a lost worker takes all its slots away. The same rules on a real one-worker cluster:
tests/test_ray_executor.py::test_two_owners_checks_share_one_worker."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="ray is not installed: `pip install 'tritonlab[ray]'` to run these")

from tritonlab.runs import capacity  # noqa: E402
from tritonlab.runs.executor import GpuBusy, WorkerLost  # noqa: E402
from tritonlab.runs.limits import Limits  # noqa: E402
from tritonlab.runs.ray_executor import driver, remote  # noqa: E402

WAIT_S = 10.0
SETTLE_S = (
    0.3  # how long a run that must keep waiting is watched (the pool re-checks every 0.5 s and on change)
)


def until(condition, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.005)


def pool_of(*slots: object) -> driver.RayPool:
    """A RayPool as _start leaves it, with workers whose self-checks reported these slots (no cluster)."""
    pool = object.__new__(driver.RayPool)
    pool._cond = threading.Condition()
    pool._waiting = []
    pool.on_capacity = None
    pool.workers = {}
    for i, n in enumerate(slots):
        report = {"actor": f"w{i}", "hostname": f"w{i}", "ip": "127.0.0.1", "node_id": f"n{i}", "slots": n}
        worker = remote.WorkerRef(None, report)
        pool.workers[worker.key] = worker
    return pool


class Runs:
    """Runs on their own threads, each holding its worker from acquire until told to release; when each held
    which worker, for the overlap checks."""

    def __init__(self, pool: driver.RayPool) -> None:
        self.pool = pool
        self.held: dict[str, remote.WorkerRef] = {}
        self.spans: dict[str, list[float]] = {}  # name -> [granted at, released at]
        self.where: dict[str, str] = {}  # name -> the worker it ran on
        self.exclusive: set[str] = set()
        self.errors: dict[str, BaseException] = {}

    def arrive(self, name: str, exclusive: bool = False, idle_wait: float | None = None) -> None:
        waiting = len(self.pool._waiting)

        def run() -> None:
            try:
                worker = self.pool.acquire(set(), None, exclusive=exclusive, idle_wait=idle_wait)
            except BaseException as exc:  # noqa: BLE001 - the test reads it
                self.errors[name] = exc
                return
            self.spans[name] = [time.monotonic(), float("inf")]
            self.where[name] = worker.key
            self.held[name] = worker

        if exclusive or idle_wait is not None:
            self.exclusive.add(name)
        threading.Thread(target=run, name=name, daemon=True).start()

        # asked: it holds a worker, waits in the pool's queue, or already ended (a run with an idle wait that a
        # loaded machine left unscheduled past its wait gives up before this thread looks: waiting for it to
        # show in the queue then would wait forever). The queue is read under the pool's lock: acquire appends
        # a run and grants it in one locked step, so a run seen in the queue is one that really waits (read
        # without the lock, a run about to be granted looked like a waiting one: CI's KeyError on held)
        def asked() -> bool:
            with self.pool._cond:
                queued = len(self.pool._waiting) > waiting
            return name in self.held or name in self.errors or queued

        until(asked, f"{name} asked for a worker")

    def release(self, name: str) -> None:
        until(lambda: name in self.held, f"{name} got a worker")
        self.spans[name][1] = time.monotonic()
        self.pool.release(self.held.pop(name))

    def running(self) -> set[str]:
        return set(self.held)

    def overlaps(self, name: str) -> list[str]:
        """The runs that held the same worker as `name` at some moment while it did."""
        a0, a1 = self.spans[name]
        return [
            o
            for o, (b0, b1) in self.spans.items()
            if o != name and self.where[o] == self.where[name] and a0 < b1 and b0 < a1
        ]


def test_a_worker_takes_as_many_runs_as_its_slots() -> None:
    pool = pool_of(2)
    assert pool.capacity == 2
    runs = Runs(pool)
    runs.arrive("a")
    runs.arrive("b")
    until(lambda: runs.running() == {"a", "b"}, "both run on the one worker at once")
    assert pool.workers["w0"].busy == 2
    runs.arrive("c")  # the worker is full: c waits
    time.sleep(SETTLE_S)
    assert runs.running() == {"a", "b"}
    runs.release("a")
    until(lambda: runs.running() == {"b", "c"}, "c takes the freed slot")
    for name in ("b", "c"):
        runs.release(name)
    assert pool.workers["w0"].busy == 0 and not runs.errors


def test_a_timing_run_has_its_worker_alone() -> None:
    """a runs (1 of 2 slots); the timing run T arrives and waits for a; c arrives after T and must not start,
    though a slot is free (T claimed the worker: it cannot starve); T runs alone; then c."""
    pool = pool_of(2)
    runs = Runs(pool)
    runs.arrive("a")
    runs.arrive("T", exclusive=True)
    runs.arrive("c")
    time.sleep(SETTLE_S)
    assert runs.running() == {"a"}, "nothing starts beside a run in flight once a timing run waits"
    runs.release("a")
    until(lambda: "T" in runs.held, "the timing run gets the emptied worker")
    time.sleep(SETTLE_S)
    assert runs.running() == {"T"} and pool.workers["w0"].busy == 2, "the timing run holds every slot"
    runs.release("T")
    until(lambda: runs.running() == {"c"}, "c runs after it")
    runs.release("c")
    assert runs.overlaps("T") == [] and not runs.errors


def test_a_timing_run_takes_an_idle_worker_at_once_and_blocks_only_that_one() -> None:
    pool = pool_of(2, 2)
    runs = Runs(pool)
    runs.arrive("a")
    busy = runs.held["a"].key
    runs.arrive("T", exclusive=True)
    until(lambda: "T" in runs.held, "the timing run takes the idle worker")
    assert runs.held["T"].key != busy
    runs.arrive("b")  # the other worker has a free slot: b runs there, beside a, not beside T
    until(lambda: "b" in runs.held, "b runs")
    assert runs.held["b"].key == busy
    for name in ("a", "T", "b"):
        runs.release(name)
    assert runs.overlaps("T") == [] and runs.overlaps("a") == ["b"] and not runs.errors


def test_the_speed_line_takes_only_an_idle_worker_and_holds_up_no_one() -> None:
    """The speed line's timing run (capacity.IDLE_ONLY_MODES, never graded): beside a run in flight it claims
    nothing — a run arriving after it starts at once on the free slot — and it gives up with GpuBusy when no
    worker was idle in time; on an idle worker it runs alone."""
    pool = pool_of(2)
    runs = Runs(pool)
    runs.arrive("a")
    runs.arrive("S", idle_wait=4.0)  # long enough that b arrives first on a loaded CI machine
    runs.arrive("b")
    until(lambda: "b" in runs.held, "b starts beside a")
    assert "S" not in runs.errors, "b started only once the speed line gave up: it was held up"
    until(lambda: "S" in runs.errors, "the speed line gives up")
    assert isinstance(runs.errors.pop("S"), GpuBusy) and pool._waiting == []
    for name in ("a", "b"):
        runs.release(name)
    runs.arrive("S2", idle_wait=1.0)
    until(lambda: "S2" in runs.held, "the speed line runs on the idle worker")
    runs.arrive("c")
    time.sleep(SETTLE_S)
    assert runs.running() == {"S2"}, "nothing runs beside a timing run"
    runs.release("S2")
    until(lambda: runs.running() == {"c"}, "c runs after it")
    runs.release("c")
    assert runs.overlaps("S2") == [] and not runs.errors


def test_the_least_loaded_worker_is_chosen() -> None:
    pool = pool_of(2, 2)
    pool.workers["w0"].runs = 5  # used more before: its tie with w1 breaks towards w1
    runs = Runs(pool)
    runs.arrive("a")
    assert runs.held["a"].key == "w1"
    runs.arrive("b")  # w1 holds a run now: w0, less loaded, though used more
    assert runs.held["b"].key == "w0"
    for name in ("a", "b"):
        runs.release(name)


def test_a_lost_worker_takes_all_its_slots_away(monkeypatch) -> None:  # noqa: ANN001
    # forget() kills the lost actor; on these stand-in handles ray.kill would start a local Ray instance in
    # this process (Ray initialises itself on first use), which the cluster tests of this session then joined
    killed: list[object] = []
    monkeypatch.setattr(driver.ray, "kill", killed.append)
    pool = pool_of(3, 2)
    told: list[int] = []
    pool.on_capacity = told.append
    assert pool.capacity == 5
    runs = Runs(pool)
    runs.arrive("a")  # on w0 (3 slots: the least loaded)
    assert runs.held["a"].key == "w0"
    pool.forget(pool.workers["w0"])
    assert pool.capacity == 2 and told == [2] and len(killed) == 1
    runs.release("a")  # its worker is gone: the slot is not given back to anyone
    for name in ("b", "c"):
        runs.arrive(name)
    until(lambda: len(runs.held) == 2, "two runs on the remaining worker")
    assert {w.key for w in runs.held.values()} == {"w1"}
    runs.arrive("d")
    time.sleep(SETTLE_S)
    assert "d" not in runs.held
    for name in ("b", "c", "d"):
        runs.release(name)
    with pytest.raises(WorkerLost, match="no other tritonlab worker is left"):
        pool.acquire({"w1"}, 1.0)


def test_a_bad_slots_report_counts_one() -> None:
    for bad in (None, "4", 0, -3, True, 2.5):
        assert pool_of(bad).capacity == 1, bad
    assert pool_of(10_000).capacity == capacity.MAX_SLOTS


@pytest.mark.parametrize(
    "mode", sorted({"run", "check", "speed_record", "replay", "inspect", "speed", "bench", "profile"})
)
def test_a_remote_run_asks_for_its_worker_alone_when_its_job_times_the_gpu(mode: str, tmp_path: Path) -> None:
    """The one list of timing modes (capacity.TIMING_MODES, which the local queue uses too) decides it."""
    asked: list[bool] = []

    class Pool:
        def acquire(
            self,
            exclude: set[str],
            timeout: float | None = None,
            exclusive: bool = False,
            idle_wait: float | None = None,
        ) -> None:
            asked.append((exclusive, idle_wait))
            raise WorkerLost("no other tritonlab worker is left in the cluster")

        def cache_for(self, run_dir: Path) -> None:
            return None

    (tmp_path / "job.json").write_text(json.dumps({"mode": mode}))
    with pytest.raises(WorkerLost):
        remote.RemoteRun(Pool(), tmp_path, Limits()).wait()
    timing = mode in {"speed", "bench", "profile"}
    assert asked == [(timing, capacity.IDLE_WAIT_S if mode == "speed" else None)]
