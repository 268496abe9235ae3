"""Issue 34, item 3 (connections): 1,100 half-open sockets leave a page answering in at most a second.

The hostile test held 1,100 half-sent requests open against a server whose descriptor limit was 1,024: every
descriptor taken, every request timed out for 30 s ("too many open files"). A real `tritonlab serve`, started
with a soft RLIMIT_NOFILE of 1,024:

- with a hard limit of 4,096, the server raises its soft limit and holds them all below its connection cap;
- with a hard limit of 1,024 (nothing to raise), it caps connections below 1,024 and each new connection
  closes the half-open one that has waited longest;

either way a page (the course index, over a fresh connection) answers within 1 s while the 1,100 sockets are
open, and every half-open socket is closed by the server once its head deadline (HEAD_TIMEOUT_S) has passed,
including one that drips a byte every second to look alive."""

from __future__ import annotations

import resource
import socket
import time
from pathlib import Path

import httpx
import pytest
from serve_process import Served, server_env

from tritonlab.web.connections import HEAD_TIMEOUT_S

SOCKETS = 1100
TOKEN = "halfopen-token-0123456789"


def open_half_sent(port: int, count: int) -> list[socket.socket]:
    """`count` sockets, each having sent the start of a request head and nothing more."""
    held = []
    for _ in range(count):
        sock = socket.socket()
        sock.settimeout(5)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        except OSError:
            sock.close()
            continue
        sock.setblocking(False)
        held.append(sock)
    return held


def closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False  # still open, nothing to read
    except OSError:
        return True  # reset


def page_time(base: str) -> float:
    with httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        started = time.monotonic()
        r = client.get("/")
        took = time.monotonic() - started
    assert r.status_code == 200, r.text[:300]
    return took


@pytest.mark.slow
@pytest.mark.parametrize("hard", [4096, 1024], ids=["hard-4096", "hard-1024"])
def test_half_open_sockets_leave_a_page_answering(tmp_path: Path, hard: int) -> None:
    soft_here, hard_here = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard_here != resource.RLIM_INFINITY and hard_here < hard:
        pytest.skip(f"this test's own hard descriptor limit is {hard_here}")
    if soft_here < SOCKETS + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard_here, 8192), hard_here))

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))

    server = Served(server_env(tmp_path / "home"), "--token", TOKEN, preexec=low_limit).start()
    held: list[socket.socket] = []
    try:
        said = "".join(server.output)
        assert f"file descriptors: {hard}" in said, said[-2000:]
        port = int(server.base.rsplit(":", 1)[1])
        alone = page_time(server.base)
        held = open_half_sent(port, SOCKETS)
        assert len(held) >= SOCKETS - 10, f"only {len(held)} sockets connected"
        drip = open_half_sent(port, 1)[0]
        time.sleep(1.0)  # the server has accepted what it will
        took = [page_time(server.base) for _ in range(3)]
        print(
            f"hard {hard}: page {alone * 1000:.0f} ms alone, {[round(t * 1000) for t in took]} ms beside them"
        )
        assert max(took) <= 1.0, f"a page took {max(took):.2f} s beside {len(held)} half-open sockets"
        deadline = time.monotonic() + HEAD_TIMEOUT_S + 15
        while time.monotonic() < deadline:
            try:
                drip.send(b"x")  # a byte a second does not extend the head's deadline
            except OSError:
                break
            time.sleep(1.0)
        assert closed_by_server(drip), "a socket dripping its head was never closed"
        still = [s for s in held if not closed_by_server(s)]
        assert not still, f"{len(still)} half-open sockets still open after the head deadline"
        assert page_time(server.base) <= 1.0
    finally:
        for sock in held:
            sock.close()
        server.stop()
