"""The run queue (service/gate.py) on its own: several runs at once, exclusive runs alone, one slot per owner
without head-of-line blocking, arrival order kept, the position reported, a waiter that gives up leaves.

Each waiter is a real thread blocked in `FairGate.acquire`; `Waiters` starts them one after another (each
standing in the queue before the next arrives) and records the order in which they were admitted."""

from __future__ import annotations

import threading
import time

import pytest

from tritonlab.service.gate import FairGate, Ticket

WAIT_S = 10.0


def until(condition, what: str, seconds: float = WAIT_S) -> None:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.005)


class Waiters:
    """Threads that each acquire the gate and keep their slot until told to release it."""

    def __init__(self, gate: FairGate) -> None:
        self.gate = gate
        self.admitted: list[str] = []
        self.tickets: dict[str, Ticket] = {}
        self.positions: dict[str, list[int]] = {}
        self.lock = threading.Lock()
        self.threads: dict[str, threading.Thread] = {}

    def arrive(self, name: str, owner: object = None, exclusive: bool = False) -> None:
        queued = self.gate.waiting + self.gate.active

        def wait() -> None:
            ticket = self.gate.acquire(
                lambda p: self.positions.setdefault(name, []).append(p), owner=owner, exclusive=exclusive
            )
            with self.lock:
                self.admitted.append(name)
                self.tickets[name] = ticket

        thread = threading.Thread(target=wait, name=name, daemon=True)
        self.threads[name] = thread
        thread.start()
        until(lambda: self.gate.waiting + self.gate.active > queued, f"{name} stands in the queue")

    def release(self, name: str) -> None:
        until(lambda: name in self.tickets, f"{name} was admitted")
        self.gate.release(self.tickets.pop(name))

    def running(self) -> set[str]:
        """Who holds a slot now (a set: runs admitted together wake in any order)."""
        with self.lock:
            return {n for n in self.admitted if n in self.tickets}


def settle() -> None:
    time.sleep(0.2)  # long enough for a wrongly admitted waiter to show up


def test_several_runs_at_once_up_to_the_size() -> None:
    gate = FairGate(3)
    w = Waiters(gate)
    for name in "abcd":
        w.arrive(name)
    settle()
    assert set(w.admitted) == {"a", "b", "c"} and gate.waiting == 1
    w.release("b")
    until(lambda: "d" in w.admitted, "d is admitted once a slot frees")
    assert gate.active == 3 and gate.waiting == 0


def test_an_exclusive_run_waits_for_the_shared_runs_and_blocks_new_ones() -> None:
    gate = FairGate(4)
    w = Waiters(gate)
    w.arrive("shared-1")
    w.arrive("shared-2")
    w.arrive("timing", exclusive=True)
    w.arrive("late")  # arrives after the exclusive run: must not start beside the runs in flight
    settle()
    assert w.running() == {"shared-1", "shared-2"}, w.admitted
    w.release("shared-1")
    settle()
    assert w.running() == {"shared-2"}, "a run started while an exclusive run waited"
    w.release("shared-2")
    until(lambda: "timing" in w.admitted, "the exclusive run starts once the shared runs ended")
    w.arrive("later", owner="someone")  # arrives while it runs: the queue is scanned again
    settle()
    assert w.running() == {"timing"}, "a run started beside the exclusive run"
    w.release("timing")
    until(lambda: {"late", "later"} <= set(w.admitted), "the runs behind it start afterwards")
    assert w.admitted[2] == "timing" and set(w.admitted[3:]) == {"late", "later"}, w.admitted


def test_one_slot_per_owner_without_blocking_the_others() -> None:
    gate = FairGate(3)
    w = Waiters(gate)
    w.arrive("alice-1", owner="alice")
    w.arrive("alice-2", owner="alice")  # waits for alice-1 although two slots are free
    w.arrive("bob-1", owner="bob")  # behind alice-2 in the queue, but not held up by it
    w.arrive("alice-3", owner="alice")
    w.arrive("carol-1", owner="carol")
    settle()
    assert w.running() == {"alice-1", "bob-1", "carol-1"}, w.admitted
    assert gate.waiting == 2
    assert w.positions["alice-2"][-1] == 1 and w.positions["alice-3"][-1] == 2
    w.release("bob-1")
    settle()
    assert "alice-2" not in w.admitted, "alice got a second slot"
    w.release("alice-1")
    until(lambda: "alice-2" in w.admitted, "alice's second run starts when her first ended")
    settle()
    assert "alice-3" not in w.admitted, "alice's third run overtook or ran beside her second"
    w.release("alice-2")
    until(lambda: "alice-3" in w.admitted, "alice's third run starts after her second")


def test_arrival_order_is_kept_and_the_position_reported() -> None:
    gate = FairGate(1)
    w = Waiters(gate)
    w.arrive("first")
    for i in range(5):
        w.arrive(f"w{i}")
    settle()
    assert [w.positions[f"w{i}"][-1] for i in range(5)] == [1, 2, 3, 4, 5]
    w.release("first")
    for i in range(5):
        until(lambda i=i: f"w{i}" in w.tickets, f"w{i} is admitted")
        if i < 4:
            until(lambda i=i: w.positions[f"w{i + 1}"][-1] == 1, f"w{i + 1} is told it is next")
        w.release(f"w{i}")
    assert w.admitted == ["first"] + [f"w{i}" for i in range(5)]


def test_a_waiter_that_gives_up_leaves_the_queue() -> None:
    gate = FairGate(1)
    w = Waiters(gate)
    w.arrive("holder")
    give_up = threading.Event()
    outcome: list[str] = []

    def quitter(position: int) -> None:
        if give_up.is_set():
            raise KeyboardInterrupt("stopped before it started")

    def wait() -> None:
        try:
            gate.acquire(quitter, owner="q", exclusive=True)
            outcome.append("admitted")
        except KeyboardInterrupt:
            outcome.append("left")

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    until(lambda: gate.waiting == 1, "the quitter stands in the queue")
    w.arrive("behind")
    assert w.positions["behind"][-1] == 2
    give_up.set()
    thread.join(WAIT_S)
    assert outcome == ["left"] and gate.waiting == 1
    until(lambda: w.positions["behind"][-1] == 1, "the run behind moves up")
    w.release("holder")
    until(lambda: "behind" in w.admitted, "the run behind is admitted (the exclusive quitter blocks nothing)")


def test_release_without_a_ticket_needs_an_ownerless_slot() -> None:
    gate = FairGate(2)
    gate.acquire(owner="alice")
    with pytest.raises(ValueError, match="no slot of owner None"):
        gate.release()
    gate.acquire()
    gate.release()
    assert gate.active == 1
