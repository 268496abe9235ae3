"""Load and durability test on loopback: simulated learners against a real `tritonlab serve` process.

Default (issue 20): the classroom run in scripts/load_classroom.py — 200 learners for 3 minutes against
`serve --classroom`, kill -9 and restart mid-load, against SQLite or a throw-away PostgreSQL:

    python scripts/load_test.py --db sqlite [--write docs/reliability.md]
    python scripts/load_test.py --db postgresql            # as root: PostgreSQL runs as `nobody`
    python scripts/load_test.py --db sqlite --smoke        # 30 s, 20 learners (what CI runs)
    python scripts/load_test.py --db sqlite --hostile      # with the hostile mix (scripts/load_hostile.py)

`--single-user`: the older single-learner run below (one token, one workspace). Each learner loads the exercise, saves an edit (with the version it loaded: a conflict is a 409, never a
silent overwrite; it retries on the disk version), then checks or runs it and reads the result stream. A
429 (queue full) is retried after a pause. Bounded: at most N learners, 3 saves each, a deadline.
Afterwards the server is killed with SIGKILL, and every acknowledged edit and attempt must be on disk.

    python scripts/load_test.py --single-user [--learners 50] [--write docs/reliability.md]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_COURSE = ROOT / "tests" / "fixtures" / "course"
SOLUTION = FIXTURE_COURSE / "01-only" / "exercises" / "vector-copy" / "solution.py"
TOKEN = "load-test-token-0123456789"
EXERCISE = "vector-copy"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start_server(home: Path) -> tuple[subprocess.Popen, str]:
    env = dict(
        os.environ,
        TRITONLAB_HOME=str(home),
        TRITONLAB_COURSE=str(FIXTURE_COURSE),
        TRITONLAB_BACKEND="interpreter",
        TRITONLAB_WORKSPACE=str(home / "ws"),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tritonlab", "serve", "--port", "0", "--no-browser", "--token", TOKEN],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if found:
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep the pipe drained
            return proc, f"http://127.0.0.1:{found.group(1)}"
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError("the server did not start")


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.status: dict[int, int] = {}
        self.acked: list[dict] = []  # {"base", "version", "text"}
        self.conflicts = 0
        self.busy = 0
        self.jobs: list[tuple[float, float]] = []  # (submitted, started) monotonic times
        self.verdicts = 0
        self.errors: list[str] = []
        self.latencies: list[float] = []

    def count(self, response: httpx.Response, started: float) -> None:
        with self.lock:
            self.status[response.status_code] = self.status.get(response.status_code, 0) + 1
            self.latencies.append(time.monotonic() - started)


def request(client: httpx.Client, tally: Tally, method: str, url: str, **kw: object) -> httpx.Response:
    started = time.monotonic()
    response = client.request(method, url, **kw)  # type: ignore[arg-type]
    tally.count(response, started)
    return response


def save(client: httpx.Client, tally: Tally, learner: int, round_no: int = 0) -> None:
    code = request(client, tally, "GET", f"/api/exercises/{EXERCISE}/code").json()
    base = code["version"]
    for attempt in range(3):
        text = SOLUTION.read_text() + f"\n# learner {learner}, round {round_no}, edit {attempt}\n"
        r = request(
            client, tally, "PUT", f"/api/exercises/{EXERCISE}/code", json={"text": text, "base_version": base}
        )
        if r.status_code == 200:
            with tally.lock:
                tally.acked.append({"base": base, "version": r.json()["version"], "text": text})
            return
        if r.status_code == 409:
            with tally.lock:
                tally.conflicts += 1
            base = r.json()["disk_version"]
            continue
        with tally.lock:
            tally.errors.append(f"save: {r.status_code} {r.text[:200]}")
        return


def job(client: httpx.Client, tally: Tally, kind: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        submitted = time.time()  # the server stamps `start` with time.time() too (same machine, same clock)
        r = request(client, tally, "POST", f"/api/exercises/{EXERCISE}/{kind}")
        if r.status_code == 429:
            with tally.lock:
                tally.busy += 1
            time.sleep(0.5)
            continue
        if r.status_code != 200:
            with tally.lock:
                tally.errors.append(f"{kind}: {r.status_code} {r.text[:200]}")
            return
        started = None
        with client.stream("GET", r.json()["events"], timeout=120) as events:
            name = ""
            for line in events.iter_lines():
                if line.startswith("data: ") and name == "start" and started is None:
                    started = json.loads(line[6:])["at"]  # when the server started it, not when we heard
                if line.startswith("event: "):
                    name = line[7:]
                    if name in ("verdict", "exit"):
                        with tally.lock:
                            tally.verdicts += 1
                    elif name == "error":
                        with tally.lock:
                            tally.errors.append(f"{kind}: error event")
        if started is not None:
            with tally.lock:
                tally.jobs.append((submitted, started))
        return


def learner(base_url: str, tally: Tally, index: int, deadline: float, round_no: int = 0) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as client:
        try:
            save(client, tally, index, round_no)
            job(client, tally, "check" if index % 5 else "run", deadline)
            request(client, tally, "GET", "/api/progress")
        except httpx.HTTPError as exc:
            with tally.lock:
                tally.errors.append(f"learner {index}: {type(exc).__name__}: {exc}")


def chain_ok(acked: list[dict], final_text: str) -> tuple[bool, str]:
    """Acknowledged saves form one chain: no two built on the same base; the disk holds the last one."""
    bases = [a["base"] for a in acked]
    if len(set(bases)) != len(bases):
        return False, "two acknowledged saves were built on the same version (a silent overwrite)"
    by_base = {a["base"]: a for a in acked}
    versions = {a["version"] for a in acked}
    heads = [a for a in acked if a["version"] not in by_base]
    starts = [a for a in acked if a["base"] not in versions]
    if len(heads) != 1 or len(starts) != 1:
        return False, f"acknowledged saves do not form one chain ({len(starts)} starts, {len(heads)} ends)"
    if heads[0]["text"] != final_text:
        return False, "the file on disk is not the last acknowledged save"
    return True, f"{len(acked)} acknowledged saves form one chain; the disk holds the last"


def run_load(learners: int = 50, budget_s: float = 50.0, rounds: int = 1) -> dict:
    home = Path(tempfile.mkdtemp(prefix="tritonlab-load-"))
    proc, base_url = start_server(home)
    tally = Tally()
    try:
        client = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        client.get("/api/status")
        rss_before = rss_mb(proc.pid)
        rss_rounds = []
        wall = 0.0
        for round_no in range(rounds):  # the same server, several rounds: memory must plateau, not climb
            started = time.monotonic()
            threads = [
                threading.Thread(target=learner, args=(base_url, tally, i, started + budget_s, round_no))
                for i in range(learners)
            ]
            for t in threads:
                t.start()
                time.sleep(0.01)
            for t in threads:
                t.join(timeout=max(1.0, started + budget_s + 30 - time.monotonic()))
            wall += time.monotonic() - started
            rss_rounds.append(round(rss_mb(proc.pid), 1))
        rss_after = rss_rounds[-1]
        attempts_acked = client.get("/api/progress").json()["attempts"]
        client.close()
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # kill -9: nothing acknowledged may be lost
        proc.wait()
    from tritonlab.store.progress import Store

    store = Store(home / "progress.sqlite3")
    final_text = (home / "ws" / "01-only" / f"{EXERCISE}.py").read_text()
    chained, chain_note = chain_ok(tally.acked, final_text)
    inversions = sum(1 for a in tally.jobs for b in tally.jobs if a[0] < b[0] - 0.05 and a[1] > b[1] + 0.05)
    latencies = sorted(tally.latencies)
    return {
        "learners": learners,
        "wall_s": round(wall, 1),
        "requests": len(latencies),
        "status": dict(sorted(tally.status.items())),
        "server_errors": sum(n for code, n in tally.status.items() if code >= 500),
        "client_errors": tally.errors[:5],
        "conflicts_409": tally.conflicts,
        "queue_full_429": tally.busy,
        "jobs_finished": tally.verdicts,
        "order_inversions": inversions,
        "p50_ms": round(1000 * latencies[len(latencies) // 2], 1) if latencies else None,
        "p95_ms": round(1000 * latencies[int(len(latencies) * 0.95)], 1) if latencies else None,
        "rss_before_mb": round(rss_before, 1),
        "rss_after_mb": round(rss_after, 1),
        "rss_by_round_mb": rss_rounds,
        "rounds": rounds,
        "acked_saves": len(tally.acked),
        "no_lost_edit": chained,
        "edit_chain": chain_note,
        "attempts_acked": attempts_acked,
        "attempts_after_kill9": len(store.attempts()),
        "integrity_ok": store.integrity_ok(),
    }


def write_section(doc: Path, marker: str, text: str) -> None:
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    body = doc.read_text() if doc.exists() else ""
    block = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in body and end in body:
        body = body[: body.index(begin)] + block + body[body.index(end) + len(end) :]
    else:
        body = body.rstrip() + "\n\n" + block + "\n"
    doc.write_text(body)


def markdown(r: dict) -> str:
    return "\n".join(
        [
            f"Measured by `scripts/load_test.py` on {time.strftime('%Y-%m-%d')}: {r['learners']} simulated learners "
            f"against a real `tritonlab serve` process on loopback (interpreter backend), {r['wall_s']} s.",
            "",
            "| figure | value |",
            "| --- | --- |",
            f"| requests (status counts) | {r['requests']} ({', '.join(f'{k}: {v}' for k, v in r['status'].items())}) |",
            f"| 5xx responses | {r['server_errors']} |",
            f"| edits acknowledged / conflicts answered 409 | {r['acked_saves']} / {r['conflicts_409']} |",
            f"| lost edits | {'none' if r['no_lost_edit'] else 'YES'}: {r['edit_chain']} |",
            f"| runs and checks finished / queue-full answers (429, retried) | {r['jobs_finished']} / {r['queue_full_429']} |",
            f"| queue order inversions (started out of arrival order by > 50 ms) | {r['order_inversions']} |",
            f"| request latency p50 / p95 | {r['p50_ms']} ms / {r['p95_ms']} ms |",
            f"| server RSS before / after each of {r['rounds']} round(s) | {r['rss_before_mb']} MiB / "
            f"{', '.join(str(v) for v in r['rss_by_round_mb'])} MiB |",
            f"| attempts acknowledged / in the database after `kill -9` | {r['attempts_acked']} / "
            f"{r['attempts_after_kill9']} (integrity_check: {'ok' if r['integrity_ok'] else 'FAILED'}) |",
        ]
    )


def classroom_markdown(r: dict) -> str:
    t = r["timeline"]
    return "\n".join(
        [
            f"Measured by `scripts/load_test.py --db {r['database']}` on {time.strftime('%Y-%m-%d')}: "
            f"{r['learners']} simulated learners for {r['duration_s']:.0f} s against a real "
            f"`tritonlab serve --classroom` on loopback (interpreter backend, {r['cpu_cores']} CPU cores; "
            f"load average {r['load_avg_1m_end']} at the end), killed with SIGKILL at "
            f"{t.get('killed_at_s')} s and restarted ({t.get('restart_s')} s until it answered).",
            "",
            "| figure | value |",
            "| --- | --- |",
            f"| requests (status counts) | {r['requests']} ({', '.join(f'{k}: {v}' for k, v in r['status'].items())}) |",
            f"| 5xx responses | {r['server_errors']} |",
            f"| page latency p50 / p95 seen by a probe at the server's priority, the whole run, kill included "
            f"({r.get('probe_pages')} pages, {r.get('probe_failed')} failed) | {r.get('probe_page_p50_ms')} ms / "
            f"{r.get('probe_page_p95_ms')} ms |",
            f"| page latency p50 / p95 seen by the 200 learners (nice 10: their own wait for CPU included) | "
            f"{r['page_p50_ms']} ms / {r['page_p95_ms']} ms |",
            f"| page latency p95 after the last log-in answered ({r['page_requests_after_logins']} pages) | "
            f"{r['page_p95_after_logins_ms']} ms |",
            f"| log-in latency p50 / p95 (argon2id, all 200 arriving within 30 s) | {r['login_p50_ms']} ms / "
            f"{r['login_p95_ms']} ms |",
            f"| CPU time the server process got, its sandboxed runs not included (of "
            f"{r['cpu_cores'] * r['timeline'].get('load_s', 0):.0f} core-seconds) | {r['server_cpu_s']} s |",
            f"| save p95 / other API p95 | {r['save_p95_ms']} ms / {r['api_p95_ms']} ms |",
            f"| checks with a verdict / cut off by the kill or the end of the run | {r['checks_with_verdict']} / "
            f"{r['checks_unfinished']} |",
            f"| queue wait (check submitted → started) p50 / p95 / max | {r['queue_wait_p50_ms']} ms / "
            f"{r['queue_wait_p95_ms']} ms / {r['queue_wait_max_ms']} ms (longest queue: {r['queue_position_max']}) |",
            f"| saves acknowledged / in flight at the kill / conflicts | {r['acked_saves']} / "
            f"{r['saves_in_flight_at_kill']} / {r['conflicts_409']} |",
            f"| acknowledged saves missing after kill -9 | {r['lost_acked_saves']} |",
            f"| acknowledged attempts missing after kill -9 | {r['lost_acked_attempts']} |",
            f"| connection errors while the server was down | {r['connection_errors_during_outage']} |",
            *hostile_rows(r.get("hostile")),
            (
                f"| SQLite `integrity_check` after the final kill -9 | {'ok' if r['integrity_ok'] else 'FAILED'} |"
                if r["database"] == "sqlite"
                else "| database server | PostgreSQL 15 started as `nobody` on a unix socket (tests/classroom_pg.py); "
                "only the tritonlab server was killed |"
            ),
        ]
    )


def hostile_rows(h: dict | None) -> list[str]:
    """The hostile mix's rows (scripts/load_hostile.py), when it ran."""
    if not h:
        return []
    m = h.get("mix", {})
    return [
        f"| hostile mix ({h.get('seconds')} s before the kill): log-in flood ({m.get('login')} addresses), "
        f"status counts | {h.get('login_status')} |",
        f"| join flood on the open link ({m.get('join')} addresses, right and wrong code), status counts | "
        f"{h.get('join_status')} |",
        f"| half-open sockets held ({m.get('half_open')}): opened / closed by the server | "
        f"{h.get('half_open_opened')} / {h.get('half_open_closed_by_server')} |",
        f"| probe page p50 / p95 while the mix ran ({h.get('probe_pages_during')} pages) vs the rest of the run, "
        f"outage left out ({h.get('probe_pages_else')} pages) | {h.get('probe_p50_during_ms')} / "
        f"{h.get('probe_p95_during_ms')} ms vs {h.get('probe_p50_else_ms')} / {h.get('probe_p95_else_ms')} ms |",
        f"| the neighbour's latency ratio, p50 / p95 | {h.get('neighbour_ratio_p50')} / "
        f"{h.get('neighbour_ratio_p95')} |",
    ]


def classroom_main(args: argparse.Namespace) -> int:
    from load_classroom import postgres_url, run_classroom_load

    os.nice(10)  # the generator yields the CPU to the server it measures
    learners, duration = (20, 30.0) if args.smoke else (args.learners, args.duration)
    stopper = None
    url = args.database_url
    if args.db == "postgresql" and url is None:
        url, stopper = postgres_url()
    try:
        hostile = ("smoke" if args.smoke else "full") if args.hostile else None
        result = run_classroom_load(
            url, learners, duration, kill_at=0.5 * duration if args.smoke else None, hostile=hostile
        )
    finally:
        if stopper is not None:
            stopper.close()  # type: ignore[attr-defined]
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2))
    if args.write:
        marker = f"classroom-load-{result['database']}" + ("-hostile" if args.hostile else "")
        write_section(args.write, marker, classroom_markdown(result))
    ok = (
        result["server_errors"] == 0
        and result["lost_acked_saves"] == 0
        and result["lost_acked_attempts"] == 0
        and result["integrity_ok"]
        and not result["durability_problems"]
    )
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single-user", action="store_true", help="the single-learner run (one token)")
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite", help="classroom database")
    parser.add_argument("--smoke", action="store_true", help="30 s with 20 learners (CI)")
    parser.add_argument(
        "--database-url", help="an existing (empty) PostgreSQL database instead of starting one"
    )
    parser.add_argument("--json-out", type=Path, help="also write the JSON result to this file")
    parser.add_argument("--duration", type=float, default=180.0, help="classroom: seconds of load")
    parser.add_argument("--learners", type=int, default=None, help="200 (classroom) or 50 (--single-user)")
    parser.add_argument("--budget", type=float, default=50.0, help="single-user: seconds for the whole load")
    parser.add_argument("--rounds", type=int, default=1, help="single-user: rounds against the same server")
    parser.add_argument(
        "--hostile",
        action="store_true",
        help="classroom: log-in and join floods and half-open sockets beside the learners (load_hostile.py)",
    )
    parser.add_argument("--write", type=Path, help="update this markdown file's load section")
    args = parser.parse_args()
    if not args.single_user:
        args.learners = args.learners or 200
        sys.exit(classroom_main(args))
    result = run_load(args.learners or 50, args.budget, args.rounds)
    print(json.dumps(result, indent=2))
    if args.write:
        write_section(args.write, "load", markdown(result))
    sys.exit(0 if result["server_errors"] == 0 and result["no_lost_edit"] and result["integrity_ok"] else 1)


if __name__ == "__main__":
    main()
