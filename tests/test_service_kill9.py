"""kill -9 between the verdict on the page and the speed (issue 31): a real `tritonlab serve` (progress in its
SQLite file) and a real `serve --classroom` (SQLite, and the test session's PostgreSQL) is killed with SIGKILL
the moment the check's SSE `verdict` event arrives, then started again: the attempt that verdict showed (its
seed) must be in the store, and the page must list the exercise as passed.

Without a GPU no speed is timed, so the window between showing and saving is microseconds and a kill alone
would almost never land in it. The test widens it without touching the product: while the check is judged
it holds the database's write lock (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: `LOCK TABLE … IN EXCLUSIVE MODE`),
so an attempt cannot be saved. A server that shows before it saves sends the verdict while the lock is held
(the test then kills it at once: the pass is lost); one that saves first waits on the lock (PostgreSQL lists
its waiting insert in `pg_locks`; on SQLite the check's run folders are gone) and shows nothing until the
test lets go. The GPU variant needs no lock: its learner's speed run blocks (`gpu` marker)."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from conftest import FIXTURE_COURSE, detach_mounts_under

pytestmark = pytest.mark.slow

EXERCISE = "vector-copy"
SOLUTION = next(FIXTURE_COURSE.glob(f"*/exercises/{EXERCISE}/solution.py")).read_text()
PASSWORD = "a-long-password-1"
GRACE_S = 2.0  # after the judging ended: time enough for a verdict sent before saving to arrive
SQLITE_HOLD_S = 20.0  # below the servers' 30 s busy timeout: a longer hold would fail the save itself


class Server:
    """A real `tritonlab serve` (or `serve --classroom`) on loopback, started again after each kill."""

    def __init__(self, env: dict, classroom: bool, backend: str = "interpreter") -> None:
        self.env, self.classroom, self.backend = env, classroom, backend
        self.proc: subprocess.Popen | None = None
        self.base = self.token = ""

    def start(self, timeout: float = 240) -> None:
        argv = [
            sys.executable,
            "-m",
            "tritonlab",
            "serve",
            "--port",
            "0",
            "--no-browser",
            "--backend",
            self.backend,
        ]
        if self.classroom:
            argv += ["--classroom", "--allow-unhardened"]
        self.proc = subprocess.Popen(
            argv,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in self.proc.stdout], daemon=True).start()  # type: ignore[union-attr]
        seen, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                assert self.proc.poll() is None, "".join(seen)
                continue
            seen.append(line)
            found = re.search(r"(http://127\.0\.0\.1:\d+)/(?:\?token=([\w-]+)|login)", line)
            if found:
                self.base, self.token = found.group(1), found.group(2) or ""
                return
        pytest.fail("the server printed no URL: " + "".join(seen))

    def client(self) -> httpx.Client:
        headers = {"Origin": self.base}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        client = httpx.Client(base_url=self.base, headers=headers, timeout=httpx.Timeout(60, read=300))
        if self.classroom:
            r = client.post("/api/login", json={"username": "anna", "password": PASSWORD})
            assert r.status_code == 200, r.text
            client.headers["X-CSRF-Token"] = r.json()["csrf"]
        return client

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)  # the server alone, as a crash would
            self.proc.wait()

    def stop(self) -> None:
        self.kill9()
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # its workers, if any outlived it
            except ProcessLookupError:
                pass


def follow(client: httpx.Client, path: str, events: queue.Queue) -> None:
    """Put each (event, data) of a job's SSE stream into `events` as it arrives."""
    name = ""
    try:
        with client.stream("GET", path) as stream:
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    events.put((name, json.loads(line[6:])))
    except httpx.HTTPError:
        pass  # the server was killed
    events.put(("closed", {}))


def check_modes(runs: Path) -> set[str]:
    """The modes of the runs in progress: each run directory's job.json (written by the server)."""
    modes = set()
    for job in runs.glob("run-*/job.json"):
        try:
            modes.add(json.loads(job.read_text()).get("mode"))
        except (OSError, ValueError):
            pass
    return modes


class Store:
    """The server's database, seen from the test: hold its write lock, list the seeds of stored attempts."""

    def __init__(self, url: str, home: Path) -> None:
        self.url, self.home = url, home

    def sqlite_path(self) -> Path:
        return Path(self.url.removeprefix("sqlite:///")) if self.url else self.home / "progress.sqlite3"

    @contextmanager
    def locked(self) -> Iterator[Callable[[], bool]]:
        """Hold the write lock on the attempts; yields `waiting()`: is a save known to be waiting on it?"""
        if self.url.startswith("postgresql"):
            import psycopg

            with psycopg.connect(self.url.replace("postgresql+psycopg://", "postgresql://")) as conn:
                conn.execute("LOCK TABLE learner_attempts IN EXCLUSIVE MODE")  # reads pass, writes wait

                def waiting() -> bool:
                    with psycopg.connect(self.url.replace("postgresql+psycopg://", "postgresql://")) as look:
                        return bool(
                            look.execute(
                                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                                "WHERE NOT l.granted AND c.relname = 'learner_attempts'"
                            ).fetchone()[0]
                        )

                yield waiting
                conn.rollback()
            return
        path = self.sqlite_path()
        assert path.stat().st_size > 0, path  # an empty file would be set aside as damaged, lock and all
        db = sqlite3.connect(path, isolation_level=None, timeout=30)
        try:
            db.execute("BEGIN IMMEDIATE")
            yield lambda: False  # SQLite cannot say who waits
            db.execute("ROLLBACK")
        finally:
            db.close()

    def seeds(self) -> set[int]:
        if self.url.startswith("postgresql"):
            import psycopg

            with psycopg.connect(self.url.replace("postgresql+psycopg://", "postgresql://")) as conn:
                return {r[0] for r in conn.execute("SELECT seed FROM learner_attempts WHERE passed")}
        table = "learner_attempts" if self.url else "attempts"
        with sqlite3.connect(self.sqlite_path()) as db:
            return {r[0] for r in db.execute(f"SELECT seed FROM {table} WHERE passed")}  # noqa: S608


def one_check(server: Server, client: httpx.Client, store: Store, runs: Path) -> tuple[str, int | None]:
    """One check of the solution, the database locked while it is judged, the server killed the moment its
    verdict event arrives. Returns (what happened, the seed the verdict showed):
    "shown-unsaved" (the verdict came while no attempt could be saved), "shown" (after the lock was let
    go), or "again" (the lock came too late or the judging took too long to tell: check once more)."""
    assert client.get("/api/progress").status_code == 200  # the store exists (a lazy one is made here)
    version = client.get(f"/api/exercises/{EXERCISE}/code").json()["version"]
    r = client.post(f"/api/exercises/{EXERCISE}/check", json={"text": SOLUTION, "base_version": version})
    assert r.status_code == 200, r.text
    events: queue.Queue = queue.Queue()
    threading.Thread(target=follow, args=(client, r.json()["events"], events), daemon=True).start()

    def next_event(timeout: float) -> tuple[str, dict] | None:
        try:
            return events.get(timeout=timeout)
        except queue.Empty:
            return None

    deadline = time.monotonic() + 240
    while (got := next_event(1)) is None or got[0] != "start":  # the check's run started: past every read
        assert got is None or got[0] not in ("verdict", "error", "closed"), got
        assert time.monotonic() < deadline, "the check never started"
    while "replay" not in check_modes(runs):  # the last run of the judging: take the lock now
        if "check" not in check_modes(runs) or not events.empty():
            return "again", None  # judged before the lock could be taken
        time.sleep(0.02)
    with store.locked() as waiting:
        if not events.empty() or "check" not in check_modes(runs):
            return "again", None
        held, over = time.monotonic(), None
        while True:
            got = next_event(0.05)
            if got is not None and got[0] == "verdict":
                server.kill9()  # shown while the attempt cannot be saved: a crash now loses it
                return "shown-unsaved", got[1]["seed"]
            assert got is None or got[0] not in ("error", "closed"), got
            if over is None and "check" not in check_modes(runs):
                over = time.monotonic()  # the judging ended (its run folders are removed)
            if over is not None and (waiting() or time.monotonic() - over > GRACE_S):
                if waiting():
                    time.sleep(GRACE_S)  # the save waits; a verdict sent anyway would arrive meanwhile
                    if not events.empty():
                        continue
                break
            if (
                over is None
                and not store.url.startswith("postgresql")
                and time.monotonic() - held > SQLITE_HOLD_S
            ):
                return "again", None  # too slow to tell before the server's busy timeout
    while (got := next_event(120)) is not None and got[0] != "verdict":  # the save goes through, then …
        assert got[0] not in ("error", "closed"), got
    assert got is not None, "no verdict after the lock was let go"
    server.kill9()  # … the verdict is shown: kill at once
    return "shown", got[1]["seed"]


def prepare(
    tmp_path: Path,
    kind: str,
    request: pytest.FixtureRequest,
    course: Path = FIXTURE_COURSE,
    backend: str = "interpreter",
) -> tuple[dict, str]:
    env = dict(os.environ)
    env.update(
        TRITONLAB_HOME=str(tmp_path / "home"),
        TRITONLAB_COURSE=str(course),
        TRITONLAB_WORKSPACE=str(tmp_path / "ws"),
        TRITONLAB_BACKEND=backend,
        TRITONLAB_LANG="en",
    )
    env.pop("TRITONLAB_DATABASE_URL", None)
    url = ""
    if kind == "classroom-postgresql":
        url = request.getfixturevalue("postgres").new_database()
        env["TRITONLAB_DATABASE_URL"] = url
    elif kind == "classroom-sqlite":
        url = f"sqlite:///{tmp_path / 'home' / 'classroom.db'}"
    if kind.startswith("classroom"):
        run = {"env": env, "capture_output": True, "text": True, "timeout": 180}
        made = subprocess.run([sys.executable, "-m", "tritonlab", "classroom", "init", "--name", "K9"], **run)
        assert made.returncode == 0, made.stderr
        roster = tmp_path / "roster.csv"
        roster.write_text(f"anna,Anna,learner,{PASSWORD}\n")
        added = subprocess.run(
            [sys.executable, "-m", "tritonlab", "classroom", "add", "--csv", str(roster)], **run
        )
        assert added.returncode == 0, added.stderr
    return env, url


@pytest.mark.parametrize("kind", ["single-user", "classroom-sqlite", "classroom-postgresql"])
def test_a_pass_the_page_showed_survives_kill_9(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env, url = prepare(tmp_path, kind, request)
    store = Store(url, tmp_path / "home")
    server = Server(env, classroom=kind != "single-user")
    try:
        server.start()
        outcome, seed = "again", None
        for _ in range(3):
            outcome, seed = one_check(server, server.client(), store, tmp_path / "home" / "runs")
            if outcome != "again":
                break
        assert outcome != "again", "the judging ended three times before the database could be locked"
        server.start()  # after kill -9
        saved = seed in store.seeds()
        progress = server.client().get("/api/progress").json()
        assert outcome == "shown" and saved, (
            f"{kind}: the page was shown a pass (seed {seed}) while its attempt could not be saved"
            if outcome == "shown-unsaved"
            else f"{kind}: the attempt the page showed (seed {seed}) is not in the store after kill -9"
        ) + f"; stored after the restart: {sorted(store.seeds())}"
        cell = next(e for lesson in progress["lessons"] for e in lesson["exercises"] if e["id"] == EXERCISE)
        assert cell["passed"] and cell["attempts"] >= 1, progress
    finally:
        server.stop()
        detach_mounts_under(tmp_path)


# ---- on a GPU: the speed run itself is the window -------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
BLOCKS_ITS_SPEED_RUN = """

# ---- the check passes; the speed run that follows never ends (tests/test_service_kill9.py) ----
import json as _json
import time as _time

_right = vector_add


def vector_add(x, y):
    try:
        with open("job.json") as f:  # each run's own directory is its working directory
            mode = _json.load(f).get("mode")
    except (OSError, ValueError):
        mode = None
    if mode == "speed_record":
        _time.sleep(600)
    return _right(x, y)
"""


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["single-user", "classroom-sqlite", "classroom-postgresql"])
def test_a_pass_shown_before_its_speed_run_survives_kill_9_on_a_gpu(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The real window: a passing GPU check shows its verdict, then waits for its timing runs; here the
    learner's speed run never ends, and the server is killed as soon as the page has the verdict."""
    course = ROOT / "course"
    env, url = prepare(tmp_path, kind, request, course=course, backend="gpu")
    store = Store(url, tmp_path / "home")
    server = Server(env, classroom=kind != "single-user", backend="gpu")
    text = next(course.glob("*/exercises/vector-add/solution.py")).read_text() + BLOCKS_ITS_SPEED_RUN
    try:
        server.start()
        client = server.client()
        version = client.get("/api/exercises/vector-add/code").json()["version"]
        r = client.post("/api/exercises/vector-add/check", json={"text": text, "base_version": version})
        assert r.status_code == 200, r.text
        events: queue.Queue = queue.Queue()
        threading.Thread(target=follow, args=(client, r.json()["events"], events), daemon=True).start()
        while True:
            name, data = events.get(timeout=300)
            assert name not in ("error", "closed"), (name, data)
            if name == "verdict":
                break
        assert data["passed"] and data["speed_pending"], data  # shown; its speed run is under way
        time.sleep(1.0)  # well inside the speed run, which never ends
        server.kill9()
        server.start()
        assert data["seed"] in store.seeds(), f"{kind}: the pass the page showed was lost by kill -9"
    finally:
        server.stop()
        detach_mounts_under(tmp_path)
