"""What a connection may hold of the server: a bound on open connections below the file-descriptor limit, and
deadlines for a request's head and body.

uvicorn accepts every connection it can and, with h11, gives a client that never finishes its request head
all the time it wants (its keep-alive timeout runs only between requests, and any byte cancels it). 1,100
half-sent requests took every descriptor of a server whose limit was 1,024: every request then timed out
("too many open files", issue 34). So `serve`:

- raises its soft RLIMIT_NOFILE to the hard limit (at most NOFILE_CEILING) before it serves (`raise_nofile`;
  runs started later inherit it, which gives them nothing: any process may raise its own soft limit to the
  hard one);
- keeps at most `max_connections` open (that limit minus RESERVED_FDS for the database, the sandbox's pipes
  and the run folders): past it, a new connection closes the one that has waited longest without a request
  in progress (half-sent or idle between requests), so a flood of half-open sockets can never lock a page
  out; only when every open connection has a request in progress is the new one closed instead;
- closes a connection whose request head is not complete HEAD_TIMEOUT_S after it opened or after its last
  response (a byte now and then does not extend it), and one whose body stalls BODY_IDLE_S with no byte;
- passes uvicorn `timeout_keep_alive` (idle between requests), `h11_max_incomplete_event_size` (the largest
  request head, past it a 400) and `limit_concurrency` (requests in progress, past it a 503) as backstops.

`ConnectionLimits` holds the figures; `protocol(limits)` is the h11 protocol class that keeps them (a
subclass of uvicorn's, hooked where a connection opens, receives, completes a response and closes).
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass
from typing import Any

HEAD_TIMEOUT_S = 10.0
BODY_IDLE_S = 30.0
KEEP_ALIVE_S = 5
MAX_HEAD_BYTES = 16 * 1024
RESERVED_FDS = 256  # descriptors kept for the database, the sandbox's pipes, run folders, logs
MAX_CONNECTIONS = 4096  # even where the descriptor limit would allow more
NOFILE_CEILING = 65536  # the soft limit is raised to the hard one, at most this


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int
    head_timeout_s: float = HEAD_TIMEOUT_S
    body_idle_s: float = BODY_IDLE_S
    nofile: int = 0  # the soft RLIMIT_NOFILE the figures were derived from

    @classmethod
    def for_nofile(cls, nofile: int) -> ConnectionLimits:
        return cls(max_connections=max(16, min(MAX_CONNECTIONS, nofile - RESERVED_FDS)), nofile=nofile)

    def uvicorn_options(self) -> dict[str, Any]:
        return {
            "timeout_keep_alive": KEEP_ALIVE_S,
            "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
            "limit_concurrency": self.max_connections + 64,  # never reached first: connections are capped
            "http": protocol(self),
        }


def raise_nofile() -> int:
    """Raise the soft RLIMIT_NOFILE towards the hard limit (at most NOFILE_CEILING); the soft limit now."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = NOFILE_CEILING if hard == resource.RLIM_INFINITY else min(hard, NOFILE_CEILING)
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return soft


class _Registry:
    """The open connections of one server, the waiting ones (no request in progress) oldest first."""

    def __init__(self) -> None:
        self.open: set[Any] = set()
        self.waiting: collections.OrderedDict[Any, None] = collections.OrderedDict()
        self.evicted = 0
        self.refused = 0
        self.timed_out = 0


def protocol(limits: ConnectionLimits) -> type:
    """uvicorn's h11 protocol, keeping `limits` (one registry per class: one class per server)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    registry = _Registry()

    class BoundedH11Protocol(H11Protocol):  # type: ignore[misc, valid-type]
        connections_registry = registry
        connection_limits = limits

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self._deadline: asyncio.TimerHandle | None = None
            self._body_timer: asyncio.TimerHandle | None = None
            super().connection_made(transport)
            registry.open.add(self)
            if len(registry.open) > limits.max_connections and not self._make_room():
                registry.refused += 1
                self._close()
                return
            self._now_waiting()

        def connection_lost(self, exc: Exception | None) -> None:
            registry.open.discard(self)
            registry.waiting.pop(self, None)
            self._cancel_timers()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.transport.is_closing():
                return
            state = self.conn.their_state
            if state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
                return  # still waiting for the rest of a request head: the deadline stands
            registry.waiting.pop(self, None)
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            if state is h11.SEND_BODY:  # a body on its way: it may not stall
                if self._body_timer is not None:
                    self._body_timer.cancel()
                self._body_timer = self.loop.call_later(limits.body_idle_s, self._stalled)
            elif self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
                self._now_waiting()

        # ---- pieces ----------------------------------------------------------------------------------

        def _now_waiting(self) -> None:
            """No request in progress: the next one's head has HEAD_TIMEOUT_S to arrive whole."""
            registry.waiting.pop(self, None)
            registry.waiting[self] = None
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(limits.head_timeout_s, self._head_too_slow)

        def _make_room(self) -> bool:
            """Close the connection that has waited longest without a request in progress; False if none."""
            for other in registry.waiting:
                if other is not self:
                    registry.evicted += 1
                    registry.waiting.pop(other, None)
                    other._close()
                    return True
            return False

        def _head_too_slow(self) -> None:
            self._deadline = None
            if self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
                registry.timed_out += 1
                self._close()

        def _stalled(self) -> None:
            self._body_timer = None
            if self.conn.their_state is h11.SEND_BODY:
                registry.timed_out += 1
                self._close()

        def _cancel_timers(self) -> None:
            for timer in (getattr(self, "_deadline", None), getattr(self, "_body_timer", None)):
                if timer is not None:
                    timer.cancel()
            self._deadline = self._body_timer = None

        def _close(self) -> None:
            self._cancel_timers()
            registry.waiting.pop(self, None)
            if not self.transport.is_closing():
                self.transport.close()

    return BoundedH11Protocol
