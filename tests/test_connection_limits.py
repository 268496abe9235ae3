"""web/connections.py on a real uvicorn server (in a thread, a small ASGI app), with short deadlines: what a
connection may hold of the server (issue 34, item 3). The whole `serve` under 1,100 half-open sockets:
tests/test_half_open_connections.py.

- past `max_connections`, a new connection closes the oldest one with no request in progress, and a request
  over a fresh connection still answers;
- when every open connection has a request in progress, the new connection is the one closed (a request in
  progress is never cut off for it);
- a body that stalls `body_idle_s` is closed; a head that drips a byte at a time is closed at `head_timeout_s`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from tritonlab.web.connections import ConnectionLimits

LIMIT = 8
release = threading.Event()


async def app(scope, receive, send) -> None:  # type: ignore[no-untyped-def]
    if scope["type"] == "lifespan":
        while True:
            kind = (await receive())["type"]  # lifespan.startup, then lifespan.shutdown
            await send({"type": f"{kind}.complete"})
            if kind == "lifespan.shutdown":
                return
    while (await receive()).get("more_body"):
        pass
    if scope["path"] == "/hold":
        while not release.is_set():
            await asyncio.sleep(0.05)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def server() -> Iterator[tuple[int, type]]:
    limits = ConnectionLimits(max_connections=LIMIT, head_timeout_s=1.5, body_idle_s=1.0)
    options = limits.uvicorn_options()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="on", **options)
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.02)
    release.clear()
    yield sock.getsockname()[1], options["http"]
    release.set()
    srv.should_exit = True
    thread.join(timeout=10)
    sock.close()


def half_sent(
    port: int, count: int, data: bytes = b"GET / HTTP/1.1\r\nHost: x\r\nX-A: "
) -> list[socket.socket]:
    held = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(data)
        held.append(s)
        time.sleep(0.01)  # accepted in this order
    return held


def closed(s: socket.socket, wait: float = 0.5) -> bool:
    s.settimeout(wait)
    try:
        return s.recv(1024) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def get(port: int, path: str = "/") -> int:
    return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5).status_code


def test_past_the_cap_the_oldest_waiting_connection_is_closed(server: tuple[int, type]) -> None:
    port, proto = server
    held = half_sent(port, 3 * LIMIT)
    assert get(port) == 200  # a fresh connection gets its answer beside them
    time.sleep(0.2)
    gone = [closed(s, 0.1) for s in held]
    # the newest LIMIT - 1 stay (one place went to the request), every older one was closed
    assert all(gone[: 2 * LIMIT]), gone
    assert not any(gone[-(LIMIT - 1) :]), gone
    assert proto.connections_registry.evicted >= 2 * LIMIT
    for s in held:
        s.close()


def test_requests_in_progress_are_never_cut_off_for_a_new_connection(server: tuple[int, type]) -> None:
    port, proto = server
    busy = half_sent(port, LIMIT, b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.3)
    extra = half_sent(port, 1)[0]
    assert closed(extra, 2.0), "a connection past the cap, with every other one busy, was kept"
    assert proto.connections_registry.refused >= 1
    assert not any(closed(s, 0.05) for s in busy), "a request in progress was cut off"
    release.set()
    for s in busy:
        s.settimeout(5)
        assert s.recv(1024).startswith(b"HTTP/1.1 200"), "a held request did not get its answer"
        s.close()
    extra.close()


def test_stalled_body_and_dripped_head_are_closed(server: tuple[int, type]) -> None:
    port, _ = server
    body = half_sent(port, 1, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")[0]
    drip = half_sent(port, 1)[0]
    started = time.monotonic()
    while time.monotonic() - started < 4.0:
        try:
            drip.send(b"y")  # a byte now and then does not extend the head's deadline
        except OSError:
            break
        time.sleep(0.3)
    assert closed(body, 0.1), "a body stalled past body_idle_s was kept open"
    assert closed(drip, 0.1), "a dripped head was kept open past head_timeout_s"
    assert get(port) == 200
