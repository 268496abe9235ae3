"""The run queue every kind of run waits in: one gate per backend (service/workers.py), with `size` runs at once
(runs/capacity.py: from the machine's cores and GPU memory; with Ray the cluster workers' slots summed).

The rules, all decided in one place (`FairGate._admit`), under one lock:
- Arrival order: the queue is scanned from its head; a run is admitted only when every run ahead of it was
  admitted or is waiting for its own owner (below). A run that cannot start for lack of room stops the scan:
  nothing behind it overtakes it, so nobody starves.
- One slot per owner (a classroom learner): a run whose owner already holds a slot, or has an earlier run still
  waiting, waits — without blocking the other owners' runs behind it (no head-of-line blocking). Runs without
  an owner (a single user's CLI, `dev check`) are not limited this way. A run that times out holds its one
  slot until it ends, never more.
- Exclusive runs (those that time a GPU: the speed line's timing run, `bench`, `profile`) start only when no
  other run is in flight, and while one waits at the head or runs, no new run starts: their figures are honest.
  The service asks for exclusivity on a local GPU only (service/jobs.py).
- Exclusive runs that only wait for an idle GPU (`idle_wait`: the speed line, which is not graded) start when
  nothing else is in flight, but never hold up a run behind them: with a queue, graded checks go first. Such a
  run that finds no idle moment within `idle_wait` seconds leaves the queue with `GpuBusy`. Without this, each
  passing check's timing run drained every slot of the GPU before it could start, and the slots stood idle.
- Background runs (`try_background`: a compile ahead when the learner saves, service/ahead.py) take a slot only
  when it is free now, never wait, one per owner, and do not count as their owner's slot. They yield: when a
  run in the queue cannot start (no room, or an exclusive or idle-only run waiting for the machine), the gate
  calls each background run's `preempt` (once; it stops the run, which then gives its slot back).
- `on_wait(position)` is called while a run waits (about twice a second, and at once on every change), with its
  place among the waiting runs (1: next); it may raise to give up the place: the run leaves the queue at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from tritonlab.runs.executor import GpuBusy  # one class for both executors: the speed line catches it

__all__ = ["FairGate", "GpuBusy", "Ticket"]

POLL_S = 0.5  # how often a waiting run's on_wait is called when nothing changes


@dataclass(eq=False)
class Ticket:
    """One run's place: in the queue, then (granted) in a slot until released."""

    owner: object = None
    exclusive: bool = False
    granted: bool = False
    idle_only: bool = False  # exclusive, but waits for an idle moment without blocking anyone behind it
    background: bool = False  # taken only when free, yields to any queued run (`try_background`)
    preempt: Callable[[], None] | None = None  # a background run's stop, called once when a queued run waits
    preempted: bool = False


class FairGate:
    """The queue and slots of one backend: see the module docstring."""

    def __init__(self, size: int) -> None:
        self._size = max(1, int(size))
        self._cond = threading.Condition()
        self._queue: list[Ticket] = []  # waiting, in arrival order
        self._held: list[Ticket] = []  # admitted and not yet released

    @property
    def size(self) -> int:
        return self._size

    @size.setter
    def size(self, value: int) -> None:  # a cluster that lost or gained workers (service/workers.py)
        with self._cond:
            self._size = max(1, int(value))
            self._admit()

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)

    @property
    def active(self) -> int:
        with self._cond:
            return len(self._held)

    def position(self, ticket: Ticket) -> int:
        with self._cond:
            return self._queue.index(ticket) + 1 if ticket in self._queue else 0

    def _busy_owners(self) -> set:
        return {t.owner for t in self._held if t.owner is not None and not t.background}

    def _preempt(self) -> None:
        """Ask every background run to stop (caller holds the lock; `preempt` must not block)."""
        for ticket in self._held:
            if ticket.background and not ticket.preempted:
                ticket.preempted = True
                if ticket.preempt is not None:
                    ticket.preempt()

    def _admit(self) -> None:
        """Grant every run the rules allow now (caller holds the lock); wake the waiters if any was."""
        busy = self._busy_owners()
        running = len(self._held)
        exclusive_running = any(t.exclusive for t in self._held)
        granted = []
        for ticket in self._queue:
            if ticket.owner is not None and ticket.owner in busy:
                continue  # waits for its owner's run (or earlier run) only; those behind it go on
            if exclusive_running:
                break
            if ticket.idle_only:
                if running:
                    self._preempt()
                    continue  # only on an idle GPU; the runs behind it go first
                granted.append(ticket)
                break
            if ticket.exclusive:
                if running:
                    self._preempt()
                    break  # waits for the runs in flight to end; blocks every run behind it meanwhile
                granted.append(ticket)
                break  # alone on the machine: nothing else starts beside it
            if running >= self._size:
                self._preempt()
                break
            granted.append(ticket)
            running += 1
            if ticket.owner is not None:
                busy.add(ticket.owner)
        for ticket in granted:
            ticket.granted = True
            self._queue.remove(ticket)
            self._held.append(ticket)
        if granted:
            self._cond.notify_all()

    def acquire(
        self,
        on_wait: Callable[[int], None] | None = None,
        *,
        owner: object = None,
        exclusive: bool = False,
        idle_wait: float | None = None,
    ) -> Ticket:
        """Wait for a slot (see the module docstring); returns the ticket to `release`. With `idle_wait`, an
        exclusive run that starts only on an idle GPU and gives up (`GpuBusy`) after that many seconds."""
        ticket = Ticket(owner, exclusive or idle_wait is not None, idle_only=idle_wait is not None)
        deadline = None if idle_wait is None else time.monotonic() + idle_wait
        with self._cond:
            self._queue.append(ticket)
            self._admit()
            try:
                while not ticket.granted:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise GpuBusy(f"the GPU was not idle once in {idle_wait:.0f} s")
                    if on_wait:
                        on_wait(self._queue.index(ticket) + 1)
                    self._cond.wait(POLL_S)
            except BaseException:
                if ticket.granted:  # admitted in the same instant it gave up: give the slot back
                    self._held.remove(ticket)
                else:
                    self._queue.remove(ticket)
                self._admit()
                self._cond.notify_all()  # the others' positions changed
                raise
        return ticket

    def try_background(
        self, owner: object = None, preempt: Callable[[], None] | None = None
    ) -> Ticket | None:
        """A slot for a background run if one is free now and nobody waits (see the module docstring), else
        None. `preempt` is called (once, under the gate's lock: it must only signal) when a queued run needs
        the room; the run then ends and is `release`d as any other."""
        with self._cond:
            if self._queue or len(self._held) >= self._size or any(t.exclusive for t in self._held):
                return None
            if owner is not None and any(t.background and t.owner == owner for t in self._held):
                return None
            ticket = Ticket(owner, granted=True, background=True, preempt=preempt)
            self._held.append(ticket)
            return ticket

    def release(self, ticket: Ticket | None = None) -> None:
        """Give a slot back: `ticket` as acquire returned it. Without one, a slot held by nobody in particular
        (an ownerless shared run: what a test holding the whole gate gives back). Slots of the same owner and
        class count alike, so a ticket whose slot was given back that way frees another such slot."""
        with self._cond:
            if ticket is None:
                ticket = Ticket()
            if ticket not in self._held:
                alike = [
                    t
                    for t in self._held
                    if t.owner == ticket.owner and t.exclusive == ticket.exclusive and not t.background
                ]
                if not alike:
                    raise ValueError(f"release(): no slot of owner {ticket.owner!r} is held")
                ticket = alike[-1]
            self._held.remove(ticket)
            self._admit()
            self._cond.notify_all()
