"""The classroom load and fault run (issue 20, deliverable 8), driven by scripts/load_test.py.

A real `tritonlab serve --classroom` process on loopback, a class made with the real CLI (`classroom init`,
`classroom add --csv`), and N simulated learners, each one thread with its own cookies: log in, open the
course page and the lesson, read and save their code (with the version they last saw), check it on the
interpreter (the server's capped worker pool: one run per learner, FIFO across learners) and follow the
check's event stream, read their progress, think for a few seconds, again. Part-way through, the server is
killed with SIGKILL and started again on the same database while the learners keep going (their sessions
live in the database, so they stay logged in). At the end it is killed with SIGKILL once more and the
database is read directly: every save a learner got a 200 for and every check whose verdict a learner saw
must be there. A request whose answer was lost in a kill is "in flight": it may or may not have committed,
and the check allows both.

The load generator runs at a lower CPU priority (nice 10) than the server it measures.

With `hostile` ("full" or "smoke"), scripts/load_hostile.py runs beside the learners from 10% of the run until
just before the kill: a log-in flood, a join flood on the open join link and half-open sockets, each from
loopback addresses of its own. The probe's page latency while it ran, over its latency the rest of the run
(the outage left out), is the neighbour's latency ratio.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_COURSE = ROOT / "tests" / "fixtures" / "course"
SOLUTION = FIXTURE_COURSE / "01-only" / "exercises" / "vector-copy" / "solution.py"
EXERCISE = "vector-copy"
LESSON = "01-only"
PAGES = ("/", f"/lessons/{LESSON}")
GRACE_S = 45.0  # after the load's end, how long learners still follow checks they submitted
DOWN = (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, httpx.ReadTimeout)
PROBE_USER, PROBE_PASSWORD = "probe", f"probe-pass-{os.getpid()}"

# A probe in a process of its own at the server's priority (not the generator's nice 10): one logged-in learner
# opening the course pages twice a second for the whole run. Its latencies are what the server answers with;
# the generator's own figures also hold the time its 200 threads wait for their share of a busy CPU.
PROBE = """
import json, sys, time
import httpx
base, user, password, seconds, out, pages = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5], sys.argv[6:]
end = time.monotonic() + seconds
took, at, failed = [], [], 0
headers = {"Origin": base}
with httpx.Client(base_url=base, timeout=30) as client:
    logged_in = False
    while time.monotonic() < end:
        try:
            if not logged_in:
                r = client.post("/api/login", json={"username": user, "password": password}, headers=headers)
                logged_in = r.status_code == 200
                if not logged_in:
                    time.sleep(1.0)
                    continue
            for page in pages:
                started = time.monotonic()
                r = client.get(page)
                if r.status_code == 200:
                    took.append(time.monotonic() - started)
                    at.append(started)
                else:
                    failed += 1
                    logged_in = r.status_code not in (401, 302, 303)
        except httpx.HTTPError:
            failed += 1  # the server killed on purpose, or restarting
            time.sleep(0.5)
        time.sleep(0.5)
json.dump({"took": took, "at": at, "failed": failed}, open(out, "w"))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(len(ordered) * p))], 1)


def server_priority() -> None:
    """The server runs at normal priority, above the load generator (nice 10), when we may raise it."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 0)
    except OSError:
        pass  # not root: the server keeps the generator's priority


class Server:
    """`tritonlab serve --classroom` on a fixed loopback port, killable with SIGKILL and restartable."""

    def __init__(self, env: dict, port: int, log: Path) -> None:
        self.env, self.port, self.log = env, port, log
        self.base = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen | None = None
        self.cpu_s = 0.0

    def start(self, timeout: float = 180) -> float:
        started = time.monotonic()
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tritonlab",
                "serve",
                "--classroom",
                "--port",
                str(self.port),
                "--no-browser",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=self.env,
            preexec_fn=server_priority,
        )
        out.close()
        while time.monotonic() - started < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the server exited ({self.proc.returncode}): {self.log.read_text()[-2000:]}"
                )
            try:
                if httpx.get(self.base + "/login", timeout=2).status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the server did not answer within {timeout} s: {self.log.read_text()[-2000:]}")

    def kill9(self) -> None:
        if self.proc and self.proc.poll() is None:
            try:  # CPU seconds the server process got (user + system), summed over its lives
                fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
                self.cpu_s = round(
                    self.cpu_s + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 1
                )
            except (OSError, IndexError, ValueError):
                pass
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@dataclass
class Learner:
    index: int
    username: str
    password: str
    acked: list[dict] = field(default_factory=list)  # saves answered 200: {"version", "text"}
    unsure_saves: list[str] = field(default_factory=list)  # versions sent whose answer was lost in a kill
    verdicts: int = 0  # checks whose verdict this learner saw
    unsure_checks: int = 0  # checks whose stream broke before the verdict (killed server)
    lost: list[str] = field(default_factory=list)


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.status: dict[int, int] = {}
        self.latency: dict[str, list[float]] = {"page": [], "api": [], "login": [], "save": []}
        self.queue_waits: list[float] = []
        self.max_position = 0
        self.rate_limited = 0
        self.down_errors = 0
        self.errors: list[str] = []
        self.conflicts = 0
        self.pages: list[tuple[float, float]] = []  # (monotonic start, seconds) of every page request
        self.last_login_at = 0.0  # when the last log-in answered: the burst is over

    def note(self, kind: str, response: httpx.Response, took: float) -> None:
        now = time.monotonic()
        with self.lock:
            self.status[response.status_code] = self.status.get(response.status_code, 0) + 1
            self.latency[kind].append(took)
            if kind == "page":
                self.pages.append((now - took, took))
            elif kind == "login":
                self.last_login_at = max(self.last_login_at, now)
            if response.status_code >= 500:
                self.errors.append(
                    f"{response.status_code} {response.request.url.path}: {response.text[:200]}"
                )

    def error(self, text: str) -> None:
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append(text)


class Run:
    """One load run: the class, the server, the learners, the kill, the verification."""

    def __init__(
        self,
        url: str | None,
        learners: int,
        duration: float,
        kill_at: float | None,
        home: Path,
        hostile: str | None = None,
    ) -> None:
        self.home, self.hostile = home, hostile
        self.join_path = ""
        self.url = url or f"sqlite:///{home / 'classroom.db'}"
        self.duration, self.kill_at = duration, kill_at
        self.tally = Tally()
        self.env = dict(
            os.environ,
            TRITONLAB_HOME=str(home),
            TRITONLAB_COURSE=str(FIXTURE_COURSE),
            TRITONLAB_BACKEND="interpreter",
            TRITONLAB_DATABASE_URL=self.url,
            PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
        )
        self.learners = [
            Learner(i, f"learner{i:03d}", f"load-pass-{i:03d}-{os.getpid()}") for i in range(learners)
        ]
        self.server = Server(self.env, free_port(), home / "server.log")
        self.outage = threading.Event()  # set while the server is down on purpose
        self.solution = SOLUTION.read_text()
        self.timeline: dict[str, float] = {}
        self.outage_at = (0.0, 0.0)  # monotonic start and end of the outage the kill makes

    # ---- the class --------------------------------------------------------------------------------------

    def cli(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "tritonlab", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"tritonlab {' '.join(args)} failed: {done.stderr[-2000:]}")
        return done.stdout

    def make_class(self) -> None:
        started = time.monotonic()
        self.join_path = json.loads(self.cli("classroom", "init", "--name", "Load test", "--json"))[
            "join_path"
        ]
        roster = self.home / "roster.csv"
        roster.write_text(
            "username,display_name,role,password\n"
            + "".join(f"{ln.username},Learner {ln.index},learner,{ln.password}\n" for ln in self.learners)
            + f"{PROBE_USER},Probe,learner,{PROBE_PASSWORD}\n"
        )
        self.cli("classroom", "add", "--csv", str(roster), "--json")
        if self.hostile:
            self.cli("classroom", "join", "--open", "--hours", "1")  # the join flood's target
        self.timeline["class_made_s"] = round(time.monotonic() - started, 1)

    # ---- one learner ----------------------------------------------------------------------------------------

    def call(self, client: httpx.Client, kind: str, method: str, path: str, **kw: object) -> httpx.Response:
        started = time.monotonic()
        response = client.request(method, path, **kw)  # type: ignore[arg-type]
        self.tally.note(kind, response, time.monotonic() - started)
        return response

    def learner(self, me: Learner, deadline: float) -> None:
        rng = random.Random(me.index)
        time.sleep(rng.uniform(0, min(30.0, self.duration / 6)))  # learners arrive over the first 30 s
        headers: dict[str, str] = {"Origin": self.server.base}
        base_version: str | None = None
        step = 0
        with httpx.Client(base_url=self.server.base, timeout=httpx.Timeout(60, read=300)) as client:
            while time.monotonic() < deadline:
                try:
                    if "X-CSRF-Token" not in headers:
                        r = self.call(
                            client,
                            "login",
                            "POST",
                            "/api/login",
                            json={"username": me.username, "password": me.password},
                            headers=headers,
                        )
                        if r.status_code != 200:
                            self.tally.error(f"{me.username} login: {r.status_code} {r.text[:200]}")
                            time.sleep(2)
                            continue
                        headers["X-CSRF-Token"] = r.json()["csrf"]
                    for page in PAGES:
                        r = self.call(client, "page", "GET", page)
                        if r.status_code != 200:
                            self.tally.error(f"{me.username} {page}: {r.status_code}")
                    r = self.call(client, "api", "GET", f"/api/exercises/{EXERCISE}/code")
                    if r.status_code == 401:  # a session can end (it never should here): log in again
                        headers.pop("X-CSRF-Token", None)
                        self.tally.error(f"{me.username}: session lost")
                        continue
                    if base_version is None:
                        base_version = r.json()["version"]
                    base_version = self.save(client, me, headers, base_version, step)
                    if step % 2 == 0:
                        self.check(client, me, headers, deadline)
                    self.call(client, "api", "GET", "/api/progress")
                    step += 1
                except DOWN as exc:
                    with self.tally.lock:
                        self.tally.down_errors += 1
                    if not self.outage.is_set():
                        self.tally.error(
                            f"{me.username}: {type(exc).__name__} while the server was up: {exc}"
                        )
                    time.sleep(0.5)
                    continue
                pause = rng.uniform(2.0, 6.0)  # reading, typing
                time.sleep(max(0.0, min(pause, deadline - time.monotonic())))

    def save(self, client: httpx.Client, me: Learner, headers: dict, base: str, step: int) -> str:
        text = self.solution + f"\n# {me.username}, edit {step}\n"
        from tritonlab.store.workspace import version_of

        try:
            r = self.call(
                client,
                "save",
                "PUT",
                f"/api/exercises/{EXERCISE}/code",
                json={"text": text, "base_version": base},
                headers=headers,
            )
        except DOWN:
            me.unsure_saves.append(version_of(text))
            raise
        if r.status_code == 200:
            me.acked.append({"version": r.json()["version"], "text": text})
            return r.json()["version"]
        if r.status_code == 409:
            disk = r.json().get("disk_version", "")
            with self.tally.lock:
                self.tally.conflicts += 1
            if disk not in me.unsure_saves:  # only an in-flight save of our own may have moved the version
                me.lost.append(f"save conflict: server has {disk[:8]}, last acknowledged {base[:8]}")
            return disk
        self.tally.error(f"{me.username} save: {r.status_code} {r.text[:200]}")
        return base

    def check(self, client: httpx.Client, me: Learner, headers: dict, deadline: float) -> None:
        for _ in range(20):
            submitted = time.time()
            r = self.call(client, "api", "POST", f"/api/exercises/{EXERCISE}/check", headers=headers)
            if r.status_code == 429:
                with self.tally.lock:
                    self.tally.rate_limited += 1
                time.sleep(float(r.headers.get("retry-after", "2")))
                continue
            if r.status_code != 200:
                self.tally.error(f"{me.username} check: {r.status_code} {r.text[:200]}")
                return
            break
        else:
            return
        name, got_verdict = "", False
        cutoff = deadline + GRACE_S  # a check submitted before the end may still report its verdict
        wait = httpx.Timeout(60, read=max(5.0, cutoff - time.monotonic()))
        try:
            with client.stream("GET", r.json()["events"], timeout=wait) as events:
                for line in events.iter_lines():
                    if time.monotonic() > cutoff and not got_verdict:
                        me.unsure_checks += 1  # the load is over: stop following a check still queued
                        return
                    if line.startswith("event: "):
                        name = line[7:]
                        continue
                    if not line.startswith("data: "):
                        continue
                    data = json.loads(line[6:])
                    if name == "queue":
                        with self.tally.lock:
                            self.tally.max_position = max(
                                self.tally.max_position, int(data.get("position", 0))
                            )
                    elif name == "start" and "at" in data:
                        with self.tally.lock:
                            self.tally.queue_waits.append(max(0.0, float(data["at"]) - submitted))
                    elif name == "verdict":
                        got_verdict = True
                        me.verdicts += 1
                    elif name == "error":
                        self.tally.error(f"{me.username} check error event: {str(data)[:200]}")
        except httpx.ReadTimeout:
            if time.monotonic() < cutoff:
                raise
            me.unsure_checks += 1  # the load is over: stop following a check still queued (it may still land)
            return
        except DOWN:
            if not got_verdict:
                me.unsure_checks += 1
            raise
        if not got_verdict:  # the stream ended without a verdict: only a kill may do that
            me.unsure_checks += 1
            if not self.outage.is_set():
                self.tally.error(f"{me.username}: a check's stream ended without a verdict")

    # ---- the hostile mix ------------------------------------------------------------------------------------

    def start_hostile(self, begin: float) -> tuple[subprocess.Popen, float, float, Path]:
        """scripts/load_hostile.py from 10% of the run until 2 s before the kill (or the end)."""
        start = begin + 0.1 * self.duration
        end = begin + (self.kill_at if self.kill_at is not None else self.duration) - 2.0
        time.sleep(max(0.0, start - time.monotonic()))
        out = self.home / "hostile.json"
        argv = [sys.executable, str(ROOT / "scripts" / "load_hostile.py")]
        argv += ["--smoke"] if self.hostile == "smoke" else []
        argv += [self.server.base, self.join_path, f"{end - time.monotonic():.1f}", str(out)]
        proc = subprocess.Popen(argv + [ln.username for ln in self.learners], env=self.env)
        return proc, time.monotonic(), end, out

    def hostile_result(self, mix: tuple[subprocess.Popen, float, float, Path], probed: dict) -> dict:
        """What the mix sent and got, and the probe's pages while it ran against the rest (outage left out)."""
        _, start, end, out = mix
        try:
            result = json.loads(out.read_text())
        except (OSError, ValueError):
            result = {"missing": "load_hostile.py wrote no result"}
        down = self.outage_at
        pairs = list(zip(probed.get("at", []), probed["took"], strict=False))
        inside = [d for at, d in pairs if start <= at <= end]
        outside = [d for at, d in pairs if not start <= at <= end and not down[0] <= at <= down[1]]
        result["probe_pages_during"], result["probe_pages_else"] = len(inside), len(outside)
        for name, values in (("during", inside), ("else", outside)):
            result[f"probe_p50_{name}_ms"] = pct(values, 0.5)
            result[f"probe_p95_{name}_ms"] = pct(values, 0.95)
        for p in ("p50", "p95"):
            a, b = result[f"probe_{p}_during_ms"], result[f"probe_{p}_else_ms"]
            result[f"neighbour_ratio_{p}"] = round(a / b, 2) if a and b else None
        return result

    # ---- the whole run ----------------------------------------------------------------------------------

    def run(self) -> dict:
        self.make_class()
        self.timeline["server_start_s"] = round(self.server.start(), 1)
        begin = time.monotonic()
        deadline = begin + self.duration
        probe_out = self.home / "probe.json"
        probe = subprocess.Popen(
            [sys.executable, "-c", PROBE, self.server.base, PROBE_USER, PROBE_PASSWORD, str(self.duration)]
            + [str(probe_out), *PAGES],
            env=self.env,
            preexec_fn=server_priority,
        )
        threads = [
            threading.Thread(target=self.learner, args=(ln, deadline), daemon=True) for ln in self.learners
        ]
        for t in threads:
            t.start()
        mix = self.start_hostile(begin) if self.hostile else None
        killed_acked = None
        try:
            if self.kill_at is not None:
                time.sleep(max(0.0, begin + self.kill_at - time.monotonic()))
                self.outage.set()
                self.server.kill9()
                killed_acked = sum(len(ln.acked) for ln in self.learners)
                self.timeline["killed_at_s"] = round(time.monotonic() - begin, 1)
                self.outage_at = (time.monotonic(), 0.0)
                self.timeline["restart_s"] = round(self.server.start(), 1)
                time.sleep(10)  # kept-alive connections to the killed server fail once more: the outage's
                self.outage_at = (self.outage_at[0], time.monotonic())
                self.outage.clear()
            for t in threads:
                t.join(timeout=max(0.0, deadline + GRACE_S + 15 - time.monotonic()))
            self.timeline["load_s"] = round(time.monotonic() - begin, 1)
        finally:
            self.outage.set()
            if mix is not None:
                try:
                    mix[0].wait(timeout=max(5.0, mix[2] + 90 - time.monotonic()))
                except subprocess.TimeoutExpired:
                    mix[0].kill()
            try:
                probe.wait(timeout=max(5.0, deadline + 40 - time.monotonic()))
            except subprocess.TimeoutExpired:
                probe.kill()
            self.server.kill9()  # kill -9 at the end as well: nothing acknowledged may be missing afterwards
        result = self.verify()
        try:
            probed = json.loads(probe_out.read_text())
        except (OSError, ValueError):
            probed = {"took": [], "failed": None}
        result["probe_pages"] = len(probed["took"])
        result["probe_failed"] = probed["failed"]
        result["probe_page_p50_ms"] = pct(probed["took"], 0.5)
        result["probe_page_p95_ms"] = pct(probed["took"], 0.95)
        result["acked_saves_before_kill"] = killed_acked
        if mix is not None:
            result["hostile"] = self.hostile_result(mix, probed)
        result["threads_still_running"] = sum(t.is_alive() for t in threads)
        return result

    def verify(self) -> dict:
        import sqlalchemy as sa

        from tritonlab.store import schema as s
        from tritonlab.store.database import make_engine

        engine = make_engine(self.url)
        with engine.connect() as db:
            ids = {r.username: r.id for r in db.execute(sa.select(s.users.c.id, s.users.c.username))}
            code = {
                r.user_id: r.version
                for r in db.execute(
                    sa.select(s.code.c.user_id, s.code.c.version).where(s.code.c.exercise == EXERCISE)
                )
            }
            counts = dict(
                db.execute(
                    sa.select(s.attempts.c.user_id, sa.func.count()).group_by(s.attempts.c.user_id)
                ).fetchall()
            )
            integrity = True
            if self.url.startswith("sqlite"):
                integrity = db.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        engine.dispose()
        missing_saves, missing_attempts, problems = 0, 0, []
        for ln in self.learners:
            uid = ids.get(ln.username)
            if ln.acked:
                allowed = {ln.acked[-1]["version"], *ln.unsure_saves[-2:]}
                if code.get(uid) not in allowed:
                    missing_saves += 1
                    problems.append(
                        f"{ln.username}: stored {str(code.get(uid))[:8]}, last acknowledged "
                        f"{ln.acked[-1]['version'][:8]}"
                    )
            stored = int(counts.get(uid, 0))
            if stored < ln.verdicts:
                missing_attempts += ln.verdicts - stored
                problems.append(f"{ln.username}: {ln.verdicts} verdicts seen, {stored} attempts stored")
            elif stored > ln.verdicts + ln.unsure_checks:
                problems.append(
                    f"{ln.username}: {stored} attempts stored, only {ln.verdicts} + "
                    f"{ln.unsure_checks} in flight"
                )
            problems += [f"{ln.username}: {p}" for p in ln.lost]
        t = self.tally
        lat = t.latency
        return {
            "database": "postgresql" if self.url.startswith("postgresql") else "sqlite",
            "learners": len(self.learners),
            "duration_s": self.duration,
            "kill_at_s": self.kill_at,
            "cpu_cores": os.cpu_count(),
            "load_avg_1m_end": round(os.getloadavg()[0], 2),
            "timeline": self.timeline,
            "requests": sum(t.status.values()),
            "status": {str(k): v for k, v in sorted(t.status.items())},
            "server_errors": sum(v for k, v in t.status.items() if k >= 500),
            "errors": t.errors[:20],
            "connection_errors_during_outage": t.down_errors,
            "logins": len(lat["login"]),
            "login_p50_ms": pct(lat["login"], 0.5),
            "login_p95_ms": pct(lat["login"], 0.95),
            "page_requests": len(lat["page"]),
            "page_p50_ms": pct(lat["page"], 0.5),
            "page_p95_ms": pct(lat["page"], 0.95),
            "page_p95_after_logins_ms": pct([d for at, d in t.pages if at > t.last_login_at], 0.95),
            "page_requests_after_logins": sum(1 for at, _ in t.pages if at > t.last_login_at),
            "server_cpu_s": self.server.cpu_s,
            "api_p95_ms": pct(lat["api"], 0.95),
            "save_p95_ms": pct(lat["save"], 0.95),
            "checks_with_verdict": sum(ln.verdicts for ln in self.learners),
            "checks_unfinished": sum(ln.unsure_checks for ln in self.learners),
            "queue_wait_p50_ms": pct(t.queue_waits, 0.5),
            "queue_wait_p95_ms": pct(t.queue_waits, 0.95),
            "queue_wait_max_ms": pct(t.queue_waits, 1.0),
            "queue_wait_mean_ms": round(1000 * statistics.fmean(t.queue_waits), 1) if t.queue_waits else None,
            "queue_position_max": t.max_position,
            "rate_limited_429": t.rate_limited,
            "acked_saves": sum(len(ln.acked) for ln in self.learners),
            "saves_in_flight_at_kill": sum(len(ln.unsure_saves) for ln in self.learners),
            "conflicts_409": t.conflicts,
            "lost_acked_saves": missing_saves,
            "lost_acked_attempts": missing_attempts,
            "durability_problems": problems[:20],
            "integrity_ok": integrity,
        }


def run_classroom_load(
    url: str | None = None,
    learners: int = 200,
    duration: float = 180.0,
    kill_at: float | None = None,
    hostile: str | None = None,
) -> dict:
    """One run; `kill_at` defaults to 60% of the duration. `url`: a PostgreSQL URL, else SQLite in a
    fresh TRITONLAB_HOME. `hostile`: "full" or "smoke" runs the hostile mix (load_hostile.py) beside it."""
    home = Path(tempfile.mkdtemp(prefix="tritonlab-classload-"))
    os.chmod(home, 0o755)
    run = Run(url, learners, duration, 0.6 * duration if kill_at is None else kill_at, home, hostile)
    try:
        return run.run()
    finally:
        remove_home(home)


def remove_home(home: Path) -> None:
    """A server killed with SIGKILL leaves its run-folder mounts (the shared runs bind, each run's tmpfs):
    unmount what lies under this run's own home, deepest first, then remove the folder."""
    import shutil

    prefix = str(home.resolve()) + "/"
    mounts = [
        line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if len(line.split()) > 1
    ]
    for point in sorted({m for m in mounts if m.startswith(prefix)}, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)
    shutil.rmtree(home, ignore_errors=True)


def postgres_url() -> tuple[str, object]:
    """A throw-away PostgreSQL server started as `nobody`, exactly as the classroom tests start theirs
    (tests/classroom_pg.py); returns (URL, the generator to close to stop it)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from classroom_pg import start_postgres

    server = start_postgres()
    pg = next(server)
    return pg.new_database(), server
