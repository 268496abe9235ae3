"""The hostile mix beside the classroom load (issue 34, item 6), run by scripts/load_classroom.py --hostile.

A process of its own (at the generator's nice 10, so its loops do not take the learners' threads' turns),
for a window of the run, against a real `serve --classroom`:

- log-in flood: LOGIN threads post wrong passwords for the class's real usernames as fast as they are
  answered, each from its own loopback source address (127.0.66.N), ignoring Retry-After;
- join flood: JOIN threads post the open join link, with the right code and fresh usernames, and with a wrong
  code, each from its own address (127.0.67.N), ignoring Retry-After;
- half-open sockets: HALF_OPEN connections from 127.0.68.N, each having sent the start of a request head and
  nothing more; every one the server closes is opened again at once.

It writes what it sent and what came back (status counts per attack, sockets opened and closed by the server)
as JSON. The neighbour's latency ratio is the probe's (load_classroom.py): its page latency while this ran
over its latency while it did not.

    python scripts/load_hostile.py [--smoke] BASE JOIN_PATH SECONDS OUT.json USERNAME...
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import socket
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

HEAD = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


@dataclass(frozen=True)
class Mix:
    login: int = 8
    join: int = 4
    half_open: int = 1100


FULL, SMOKE = Mix(), Mix(login=2, join=1, half_open=200)


class Counts:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.status: dict[str, dict[str, int]] = {"login": {}, "join": {}}
        self.errors = 0
        self.opened = self.closed_by_server = self.refused = 0

    def note(self, kind: str, code: int | str) -> None:
        with self.lock:
            self.status[kind][str(code)] = self.status[kind].get(str(code), 0) + 1


def client(address: str, base: str) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=base, transport=transport, timeout=30, headers={"Origin": base})


def login_flood(base: str, address: str, users: list[str], until: float, counts: Counts) -> None:
    rng = random.Random(address)
    with client(address, base) as c:
        while time.monotonic() < until:
            name = rng.choice(users)
            c.cookies.clear()
            try:
                r = c.post("/api/login", json={"username": name, "password": f"guess-{rng.random()}"})
                counts.note("login", r.status_code)
            except httpx.HTTPError:
                counts.note("login", "error")
                time.sleep(0.2)


def join_flood(base: str, address: str, join_path: str, until: float, counts: Counts) -> None:
    rng = random.Random(address)
    code = join_path.rsplit("/", 1)[-1]
    with client(address, base) as c:
        while time.monotonic() < until:
            wrong = rng.random() < 0.5
            path = f"/api/join/{'x' * len(code) if wrong else code}"
            body = {"username": f"j{rng.getrandbits(40):x}", "password": f"join-pass-{rng.random()}"}
            c.cookies.clear()  # a stranger's every request is new: no session, so no CSRF token to send
            try:
                counts.note("join", c.post(path, json=body).status_code)
            except httpx.HTTPError:
                counts.note("join", "error")
                time.sleep(0.2)


def half_open(port: int, count: int, until: float, counts: Counts) -> None:
    """Keep `count` half-sent requests open until `until`, opening again each one the server closes."""
    held: list[socket.socket] = []

    def open_one(i: int) -> socket.socket | None:
        sock = socket.socket()
        sock.settimeout(5)
        try:
            sock.bind((f"127.0.68.{1 + i % 200}", 0))
            sock.connect(("127.0.0.1", port))
            sock.sendall(HEAD)
        except OSError:
            sock.close()
            with counts.lock:
                counts.refused += 1
            return None
        sock.setblocking(False)
        with counts.lock:
            counts.opened += 1
        return sock

    i = 0
    while time.monotonic() < until:
        alive = []
        for sock in held:
            try:
                gone = sock.recv(1) == b""
            except BlockingIOError:
                gone = False
            except OSError:
                gone = True
            if gone:
                sock.close()
                with counts.lock:
                    counts.closed_by_server += 1
            else:
                alive.append(sock)
        held = alive
        while len(held) < count and time.monotonic() < until:
            sock = open_one(i)
            i += 1
            if sock is None:
                break
            held.append(sock)
        time.sleep(0.5)
    for sock in held:
        sock.close()


def run(base: str, join_path: str, users: list[str], seconds: float, mix: Mix) -> dict:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = mix.half_open + 256
    if soft < want and (hard == resource.RLIM_INFINITY or hard >= want):
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    until = time.monotonic() + seconds
    counts = Counts()
    port = int(base.rsplit(":", 1)[1])
    threads = [
        threading.Thread(target=login_flood, args=(base, f"127.0.66.{1 + n}", users, until, counts))
        for n in range(mix.login)
    ]
    threads += [
        threading.Thread(target=join_flood, args=(base, f"127.0.67.{1 + n}", join_path, until, counts))
        for n in range(mix.join)
    ]
    threads.append(threading.Thread(target=half_open, args=(port, mix.half_open, until, counts)))
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 60)
    return {
        "mix": asdict(mix),
        "seconds": round(time.monotonic() - started, 1),
        "login_status": counts.status["login"],
        "join_status": counts.status["join"],
        "half_open_opened": counts.opened,
        "half_open_closed_by_server": counts.closed_by_server,
        "half_open_connect_failed": counts.refused,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help=f"the CI size: {SMOKE} instead of {FULL}")
    parser.add_argument("base", help="the server's URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("join_path", help="the class's join path, /join/CODE (the link must be open)")
    parser.add_argument("seconds", type=float, help="how long the mix runs")
    parser.add_argument("out", type=Path, help="where the JSON result is written")
    parser.add_argument("users", nargs="+", help="the class's usernames (the log-in flood's targets)")
    args = parser.parse_args()
    result = run(args.base, args.join_path, args.users, args.seconds, SMOKE if args.smoke else FULL)
    args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
