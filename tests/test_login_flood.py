"""Issue 34, item 3 (concurrent log-ins): an anonymous log-in flood does not hold up a real learner's log-in.

The hostile test measured a real log-in at 12.9 s beside a flood of wrong ones (0.14 s alone): every hash
waited in one unbounded line. A real `serve --classroom` with a real argon2id cost (OWASP's floor,
t=2, m=19 MiB: a few tens of ms a hash here), 80 clients flooding log-ins with made-up usernames from other
loopback addresses (127.0.0.2-5, so the server sees other client addresses), and a learner logging in from
127.0.0.1: with the pool's turns per address, their log-in waits for at most a hash or two of the flood's,
never for the flood's whole queue. Bound: 4 x their log-in time without the flood, plus 0.5 s. Every flood
request is answered (401, 429 or 503 with Retry-After), never a 500 or a hang."""

from __future__ import annotations

import secrets
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from serve_process import Served, server_env

FLOODERS = 80
OWASP_FLOOR = "t=2,m=19456,p=1"


def timed_login(base: str, username: str, password: str) -> float:
    with httpx.Client(base_url=base, timeout=120) as client:
        started = time.monotonic()
        r = client.post(
            "/api/login", json={"username": username, "password": password}, headers={"Origin": base}
        )
        took = time.monotonic() - started
    assert r.status_code == 200, r.text
    return took


@pytest.mark.slow
def test_a_login_flood_leaves_a_real_login_its_turn(tmp_path: Path) -> None:
    env = server_env(
        tmp_path / "home",
        TRITONLAB_ARGON2=OWASP_FLOOR,
        TRITONLAB_DATABASE_URL=f"sqlite:///{tmp_path / 'c.db'}",
    )

    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "tritonlab", "classroom", *args], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    cli("init", "--name", "Flood class")
    cli("add", "--csv", str(_roster(tmp_path)))
    server = Served(env, "--classroom", "--allow-unhardened").start()
    stop = threading.Event()
    answers: dict[int, int] = {}
    problems: list[str] = []
    lock = threading.Lock()

    def flood(index: int) -> None:
        transport = httpx.HTTPTransport(local_address=f"127.0.0.{2 + index % 4}")
        with httpx.Client(base_url=server.base, transport=transport, timeout=120) as client:
            while not stop.is_set():
                body = {"username": "nobody-" + secrets.token_hex(4), "password": "wrong-password-1"}
                try:
                    r = client.post("/api/login", json=body, headers={"Origin": server.base})
                except httpx.HTTPError as exc:
                    with lock:
                        problems.append(f"{type(exc).__name__}: {exc}")
                    continue
                with lock:
                    answers[r.status_code] = answers.get(r.status_code, 0) + 1
                if r.status_code == 503:
                    assert int(r.headers["retry-after"]) >= 1
                    time.sleep(0.2)

    try:
        alone = statistics.median(timed_login(server.base, "learner1", "pw-learner-0001") for _ in range(3))
        threads = [threading.Thread(target=flood, args=(i,), daemon=True) for i in range(FLOODERS)]
        for t in threads:
            t.start()
        time.sleep(3.0)  # the flood's queue is full
        with lock:
            flooded_before = sum(answers.values())
        under = [timed_login(server.base, f"learner{n}", f"pw-learner-{n:04d}") for n in (2, 3, 4)]
        stop.set()
        for t in threads:
            t.join(timeout=120)
        took = statistics.median(under)
        print(
            f"real log-in alone {alone * 1000:.0f} ms, beside the flood {took * 1000:.0f} ms; flood answers {answers}"
        )
        assert flooded_before > 0 and answers.get(401, 0) > 0, answers  # the flood really ran
        assert not problems, problems[:5]
        assert set(answers) <= {401, 429, 503}, answers
        assert took <= 4 * alone + 0.5, (
            f"a real log-in took {took:.2f} s beside the flood, {alone:.2f} s alone"
        )
    finally:
        stop.set()
        server.stop()


def _roster(folder: Path) -> Path:
    roster = folder / "roster.csv"
    roster.write_text(
        "username,display_name,role,password\n"
        + "".join(f"learner{n},Learner {n},learner,pw-learner-{n:04d}\n" for n in range(1, 5))
    )
    return roster
