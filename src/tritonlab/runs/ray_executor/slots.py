"""Which waiting run gets which cluster worker's slot: the rules of driver.RayPool.acquire, in one function
(`grant`), applied under the pool's lock whenever something changed (a run arrived, one ended, a worker was lost).
No ray import: tests/test_ray_slots.py drives it with plain workers.

- Arrival order: the waiting runs are scanned from the oldest; each takes what it may, before those behind it.
- A shared run takes one free slot of a worker not in its `exclude` (the workers a retry already tried), the least
  loaded first (the pool's `prefer`); never on a worker held alone or claimed by a waiting exclusive run.
- An exclusive run (one that times the GPU: capacity.times_gpu) takes a worker with no run in flight and holds all
  its slots (`alone`) until it ends. While no such worker exists it claims one, the least loaded (`claimed_by`):
  that worker takes no new shared run, so its runs in flight end and the exclusive run gets it; it cannot starve.
  A worker is claimed by one exclusive run at a time; a run whose claimed worker was lost claims another.
- An idle-only run (`idle_only`: the speed line, never graded) takes a worker alone only when one has no run
  in flight and no claim on it; it claims nothing and holds up no run behind it (its caller gives up in time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Slotted(Protocol):
    """A worker as the slot rules see it (remote.WorkerRef)."""

    key: str
    slots: int
    busy: int  # runs in flight; `slots` while held alone
    alone: bool  # held by an exclusive run
    claimed_by: object  # the exclusive run waiting for it to empty, or None
    runs: int  # runs it was given, ever


@dataclass(eq=False)
class Want:
    """One run waiting for a worker: what it may not use, whether it needs the worker alone, what it got."""

    exclude: set[str] = field(default_factory=set)
    exclusive: bool = False
    idle_only: bool = False  # exclusive, but only on an idle worker, holding up no one
    worker: Slotted | None = None  # granted
    claimed: Slotted | None = None  # exclusive, waiting: the worker it claimed

    def unclaim(self) -> None:
        if self.claimed is not None and self.claimed.claimed_by is self:
            self.claimed.claimed_by = None
        self.claimed = None


def grant(waiting: list[Want], workers: list[Slotted], prefer: Callable[[Slotted], tuple]) -> bool:
    """Give each waiting run (in order) what the rules allow now; granted ones leave `waiting`. True when any
    was granted."""
    live = {w.key for w in workers}
    granted = []
    for want in waiting:
        usable = [w for w in workers if w.key not in want.exclude]
        if want.claimed is not None and want.claimed.key not in live:
            want.unclaim()  # its worker was lost
        if want.idle_only:
            idle = [w for w in usable if w.busy == 0 and w.claimed_by is None]
            if idle:
                worker = min(idle, key=prefer)
                worker.busy, worker.alone = worker.slots, True
                _give(want, worker, granted)
            continue
        if want.exclusive:
            idle = [w for w in usable if w.busy == 0 and w.claimed_by in (None, want)]
            if idle:
                worker = want.claimed if want.claimed in idle else min(idle, key=prefer)
                want.unclaim()
                worker.busy, worker.alone = worker.slots, True
                _give(want, worker, granted)
            elif want.claimed is None:
                free = [w for w in usable if w.claimed_by is None]
                if free:
                    want.claimed = min(free, key=prefer)
                    want.claimed.claimed_by = want
            continue
        room = [w for w in usable if not w.alone and w.claimed_by is None and w.busy < w.slots]
        if room:
            worker = min(room, key=prefer)
            worker.busy += 1
            _give(want, worker, granted)
    for want in granted:
        waiting.remove(want)
    return bool(granted)


def _give(want: Want, worker: Slotted, granted: list[Want]) -> None:
    want.worker = worker
    worker.runs += 1
    granted.append(want)
