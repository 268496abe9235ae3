"""The run queue every kind of run waits in: one FIFO gate per backend, admitting runs strictly in arrival order
(one at a time on a GPU, a small pool on the interpreter, one per cluster worker with Ray)."""

from __future__ import annotations

import threading
from collections.abc import Callable


class FairGate:
    """A counting gate that admits waiters strictly in arrival order, and says where each one stands."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._cond = threading.Condition()
        self._active = 0
        self._queue: list[object] = []

    def position(self, ticket: object) -> int:
        with self._cond:
            return self._queue.index(ticket) + 1 if ticket in self._queue else 0

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._queue)

    def acquire(self, on_wait: Callable[[int], None] | None = None) -> None:
        """Wait for a free slot. `on_wait(position)` is called while waiting; it may raise to give up the
        place in the queue (a run stopped before it started): the ticket leaves the queue at once."""
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            try:
                while self._queue[0] is not ticket or self._active >= self.size:
                    if on_wait:
                        on_wait(self._queue.index(ticket) + 1)
                    self._cond.wait(0.5)
            except BaseException:
                self._queue.remove(ticket)
                self._cond.notify_all()
                raise
            self._queue.pop(0)
            self._active += 1
            self._cond.notify_all()

    def release(self) -> None:
        with self._cond:
            self._active -= 1
            self._cond.notify_all()
