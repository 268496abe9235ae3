"""The password-hashing pool the web server's log-ins and joins wait in: a few threads, a bounded queue, and a
fair share per client address.

argon2id costs tens of milliseconds of one core and its `m` of memory per hash (docs/classroom.md, "Password
hashing cost"), so a server can only hash so fast. Before, every log-in queued in an unbounded executor, and
joins hashed in the request threads: an anonymous flood of log-ins made a real one wait 12.9 s (issue 34), 80
joins stalled every page. Now:

- `workers` threads hash (auth.HASH_SLOTS: cores - 1, between 1 and 4), never more;
- at most `max_waiting` requests wait in all and `per_address` from one client address; past either, `run`
  raises `PoolFull` at once (the route answers 503 with Retry-After: an estimate of when there is room), so a
  flood costs the server a bounded queue, never an unbounded pile-up of coroutines and sockets;
- the workers take the addresses in turn (round robin), so a real learner's log-in waits for at most one hash
  per other address with work queued, however many requests one address has queued;
- an address whose requests were refused FLAGGED_AFTER times in the last FLAG_WINDOW_S seconds (wrong
  passwords, unknown usernames: what a flood is made of) is served only one turn in CLEAN_TURNS + 1 while
  addresses without refusals wait, so a flood from a handful of addresses cannot take the share of a class
  either; a learner who mistypes a password a few times is not flagged.

The client address is the one `web/classroom/login.client_address` gives (the proxy's helper decides which).
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
from collections.abc import Callable
from typing import Any

MAX_WAITING = 512  # requests waiting for a hash, all addresses together
PER_ADDRESS = 256  # ... from one client address (a class behind one NAT shares one)
FLAGGED_AFTER = 8  # refusals from one address within FLAG_WINDOW_S: served after addresses without any
FLAG_WINDOW_S = 60.0
CLEAN_TURNS = 3  # turns given to unflagged addresses for each turn of a flagged one, while both wait
MAX_REMEMBERED = 4096  # addresses whose recent refusals are remembered (the oldest are forgotten first)


class PoolFull(Exception):
    """No room to wait for a hash: try again after `retry_after` seconds."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Task:
    __slots__ = ("address", "fn", "args", "loop", "future", "queued_at")

    def __init__(
        self, address: str, fn: Callable[..., Any], args: tuple, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.address, self.fn, self.args, self.loop = address, fn, args, loop
        self.future: asyncio.Future[Any] = loop.create_future()
        self.queued_at = time.monotonic()


class HashPool:
    def __init__(
        self,
        workers: int,
        max_waiting: int = MAX_WAITING,
        per_address: int = PER_ADDRESS,
        name: str = "argon2",
    ) -> None:
        self.workers, self.max_waiting, self.per_address, self.name = workers, max_waiting, per_address, name
        self._queues: collections.OrderedDict[str, collections.deque[_Task]] = collections.OrderedDict()
        self._waiting = 0
        self._refusals: collections.OrderedDict[str, collections.deque[float]] = collections.OrderedDict()
        self._clean_streak = 0
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._seconds = 0.1  # a running mean of one task's time, for Retry-After
        self.served = 0

    # ---- asking ---------------------------------------------------------------------------------------------

    async def run(self, address: str, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` on a hashing thread, in `address`'s turn; its result or its exception. Raises PoolFull at
        once when there is no room to wait."""
        task = _Task(address, fn, args, asyncio.get_running_loop())
        with self._cond:
            queue = self._queues.get(address)
            mine = len(queue) if queue else 0
            if self._waiting >= self.max_waiting or mine >= self.per_address:
                who = "from your address" if mine >= self.per_address else "in all"
                raise PoolFull(
                    f"the server is checking too many passwords at once ({self._waiting} waiting {who}); "
                    "try again shortly",
                    self.retry_after(mine if mine >= self.per_address else self._waiting),
                )
            if queue is None:
                queue = self._queues[address] = collections.deque()
            queue.append(task)
            self._waiting += 1
            self._start_workers()
            self._cond.notify()
        try:
            return await task.future
        except asyncio.CancelledError:  # the client went away: its turn is not hashed for nobody
            with self._cond:
                queue = self._queues.get(address)
                if queue is not None and task in queue:
                    queue.remove(task)
                    self._waiting -= 1
                    if not queue:
                        del self._queues[address]
            raise

    def refused(self, address: str) -> None:
        """The request hashed for `address` was refused (a wrong password, an unknown user, a taken name)."""
        now = time.monotonic()
        with self._cond:
            seen = self._refusals.pop(address, None) or collections.deque()
            seen.append(now)
            while seen and now - seen[0] > FLAG_WINDOW_S:
                seen.popleft()
            while len(seen) > FLAGGED_AFTER:
                seen.popleft()
            self._refusals[address] = seen  # most recent last
            while len(self._refusals) > MAX_REMEMBERED:
                self._refusals.popitem(last=False)

    def retry_after(self, ahead: int) -> int:
        """Seconds until `ahead` queued tasks are likely done (at least 1)."""
        return max(1, int(ahead * self._seconds / max(1, self.workers)) + 1)

    @property
    def waiting(self) -> int:
        with self._cond:
            return self._waiting

    def flagged(self, address: str) -> bool:
        with self._cond:
            return self._flagged(address, time.monotonic())

    # ---- the workers ----------------------------------------------------------------------------------------

    def _flagged(self, address: str, now: float) -> bool:
        seen = self._refusals.get(address)
        if not seen:
            return False
        recent = sum(1 for at in seen if now - at <= FLAG_WINDOW_S)
        return recent >= FLAGGED_AFTER

    def _start_workers(self) -> None:
        while len(self._threads) < self.workers:
            thread = threading.Thread(
                target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _next(self) -> _Task:
        """The next task, the lock held: addresses in turn; flagged ones one turn in CLEAN_TURNS + 1."""
        now = time.monotonic()
        clean = next((a for a in self._queues if not self._flagged(a, now)), None)
        flagged = next((a for a in self._queues if self._flagged(a, now)), None)
        if clean is not None and flagged is None:
            address, self._clean_streak = clean, 0
        elif clean is not None and self._clean_streak < CLEAN_TURNS:
            address, self._clean_streak = clean, self._clean_streak + 1
        else:
            address, self._clean_streak = flagged or clean, 0  # type: ignore[assignment]
        queue = self._queues.pop(address)  # type: ignore[arg-type]
        task = queue.popleft()
        if queue:
            self._queues[address] = queue  # to the back of the line: the others' turn first  # type: ignore[index]
        self._waiting -= 1
        return task

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._waiting:
                    self._cond.wait()
                task = self._next()
            if task.future.cancelled():
                continue
            started = time.monotonic()
            try:
                result, error = task.fn(*task.args), None
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting request
                result, error = None, exc
            took = time.monotonic() - started
            with self._cond:
                self._seconds = 0.8 * self._seconds + 0.2 * took
                self.served += 1
            try:
                task.loop.call_soon_threadsafe(_settle, task.future, result, error)
            except RuntimeError:  # that request's event loop has closed (the server stopped)
                pass


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
