"""Each documented guarantee, tested so that the test fails when the guarantee breaks (issue 14).

Every test here was checked against a hand-made mutation of the code it guards (see docs/testing.md and
scripts/mutate.py, which repeats those mutations automatically).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import typer
from conftest import FIXTURE_COURSE
from fastapi.testclient import TestClient
from starlette.routing import Mount

from tritonlab.content.course import load_course
from tritonlab.grading.check import pipeline
from tritonlab.runs import runfolder, sandbox
from tritonlab.runs.collect import RunResult
from tritonlab.runs.limits import RUN_USER_NAME, Limits
from tritonlab.service import Service
from tritonlab.service.gate import FairGate
from tritonlab.store.progress import Store
from tritonlab.web import create_app, jobs
from tritonlab.web.security import cookie_name, cookie_value

TOKEN = "guarantee-token-0123456789abcdef"
BASE = "http://127.0.0.1:8000"


# ---- authentication on every route -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    root = tmp_path_factory.mktemp("guarantee-web")
    saved = os.environ.get("TRITONLAB_HOME")
    os.environ["TRITONLAB_HOME"] = str(root / "home")
    service = Service(course_dir=FIXTURE_COURSE, workspace_dir=root / "ws", backend="interpreter", lang="en")
    yield create_app(service, TOKEN)
    service.close()
    if saved is None:
        os.environ.pop("TRITONLAB_HOME", None)
    else:
        os.environ["TRITONLAB_HOME"] = saved


def every_route(app) -> list[tuple[str, str]]:  # noqa: ANN001
    """(method, concrete path) for every route and mount the app has, found by walking the app itself (so a
    route added later is covered without touching this test)."""
    found: list[tuple[str, str]] = []

    def walk(routes: list, prefix: str) -> None:
        for route in routes:
            if hasattr(route, "original_router"):  # FastAPI >= 0.165 keeps included routers as branches
                walk(route.original_router.routes, prefix + route.include_context.prefix)
            elif isinstance(route, Mount):
                found.append(("GET", prefix + route.path + "/app.js"))
            else:
                path = prefix + re.sub(r"\{[^}]+\}", "1", route.path)
                for method in sorted(getattr(route, "methods", None) or {"GET"}):
                    if method != "HEAD":
                        found.append((method, path))

    walk(app.routes, "")
    return found


FORGED_COOKIES = {
    "another server's session": cookie_value("some-other-token-0123456789"),
    "random hex": "0" * 64,
    "the token itself": TOKEN,
    "empty": "",
    "a prefix of the real value": cookie_value(TOKEN)[:-1],
}
WRONG_BEARERS = {
    "wrong token": "Bearer wrong-token-0123456789abcdef",
    "empty": "Bearer ",
    "prefix of the token": f"Bearer {TOKEN[:-1]}",
    "token plus a character": f"Bearer {TOKEN}x",
    "no scheme": TOKEN,
    "the cookie value": f"Bearer {cookie_value(TOKEN)}",
}


def test_every_route_refuses_a_wrong_token_and_a_forged_cookie(app) -> None:  # noqa: ANN001
    routes = every_route(app)
    assert len(routes) >= 20, routes  # the walk found the API, the pages and the static mount
    client = TestClient(app, base_url=BASE)
    same_origin = {"Origin": BASE}
    for method, path in routes:
        for what, header in WRONG_BEARERS.items():
            r = client.request(method, path, headers={"Authorization": header, **same_origin})
            assert r.status_code == 401, f"{method} {path} with Bearer {what}: {r.status_code}"
        for what, value in FORGED_COOKIES.items():
            client.cookies.clear()
            client.cookies.set(cookie_name(TOKEN), value)
            r = client.request(method, path, headers=same_origin)
            assert r.status_code == 401, f"{method} {path} with a forged cookie ({what}): {r.status_code}"
        client.cookies.clear()
        # the right value under another server's cookie name (the name is derived from the token)
        client.cookies.set(cookie_name("some-other-token-0123456789"), cookie_value(TOKEN))
        r = client.request(method, path, headers=same_origin)
        assert r.status_code == 401, f"{method} {path} with the value under a wrong name: {r.status_code}"
        client.cookies.clear()
        assert client.request(method, path, headers=same_origin).status_code == 401
        if method == "GET" and not path.startswith("/api/"):
            r = client.get(path + "?token=wrong-token-0123456789", follow_redirects=False)
            assert r.status_code == 401 and "set-cookie" not in r.headers, f"GET {path}?token=wrong"


def test_the_right_credentials_pass_on_every_read_route(app) -> None:  # noqa: ANN001
    """The control for the test above: the 401s come from the credentials, not from the made-up paths."""
    client = TestClient(app, base_url=BASE)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    for method, path in every_route(app):
        if method != "GET":
            continue
        assert client.get(path, headers=bearer).status_code != 401, f"GET {path} with the right token"
        client.cookies.set(cookie_name(TOKEN), cookie_value(TOKEN))
        assert client.get(path).status_code != 401, f"GET {path} with the right cookie"
        client.cookies.clear()


# ---- durability: every store connection is WAL + synchronous=FULL ---------------------------------------


def test_every_store_connection_is_wal_and_synchronous_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, int]] = []
    real_connect = sqlite3.connect

    class Checked(sqlite3.Connection):
        def close(self) -> None:  # read the settings the store left on this connection, then close it
            mode = self.execute("PRAGMA journal_mode").fetchone()[0]
            level = self.execute("PRAGMA synchronous").fetchone()[0]
            seen.append((mode, level))
            super().close()

    def connect(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        kwargs["factory"] = Checked
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    store = Store(tmp_path / "progress.db")
    store.record_attempt({"exercise": "vector-copy", "passed": True, "backend": "interpreter"})
    store.record_hint("vector-copy", 0)
    store.record_quiz_answer("01", "q", "a", 1.0)
    store.record_quiz_result("01", 1.0, True)
    store.set_state("k", "v")
    assert store.get_state("k") == "v" and store.passed_exercises() == {"vector-copy"}
    store.attempts()
    store.best_quiz()
    assert len(seen) >= 9, "every Store call opens (and closes) a connection through sqlite3.connect"
    # 2 is FULL (OFF=0, NORMAL=1, EXTRA=3): an acknowledged attempt survives a power loss, not only a crash
    assert all(s == ("wal", 2) for s in seen), seen


# ---- the run queue and the caps --------------------------------------------------------------------------


def test_the_run_queue_is_first_come_first_served() -> None:
    gate = FairGate(1)
    gate.acquire()  # hold the only slot so that everyone below queues
    order: list[int] = []
    threads = []
    for i in range(6):
        thread = threading.Thread(target=lambda i=i: (gate.acquire(), order.append(i), gate.release()))
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 10
        while gate.waiting < i + 1:  # wait until waiter i stands in the queue before the next arrives
            assert time.monotonic() < deadline
            time.sleep(0.005)
    gate.release()
    for thread in threads:
        thread.join(10)
    assert order == list(range(6))


def test_the_gate_admits_exactly_its_size_at_once() -> None:
    gate = FairGate(2)
    gate.acquire()
    gate.acquire()
    third = threading.Thread(target=gate.acquire, daemon=True)
    third.start()
    time.sleep(0.3)
    assert third.is_alive() and gate.waiting == 1
    gate.release()
    third.join(5)
    assert not third.is_alive()


def test_at_most_max_active_runs_are_in_flight() -> None:
    assert jobs.MAX_ACTIVE == 16
    release = threading.Event()
    pool = jobs.Jobs()
    started = [pool.start("run", str(i), lambda job: release.wait(30)) for i in range(jobs.MAX_ACTIVE)]
    assert len(started) == 16 and pool.active == 16
    with pytest.raises(jobs.Busy):
        pool.start("run", "one too many", lambda job: None)
    release.set()
    deadline = time.monotonic() + 10
    while pool.active:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    pool.start("run", "room again", lambda job: None)


def test_at_most_four_pictures_are_drawn_at_once(app, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    from tritonlab.viz import run as viz_run
    from tritonlab.web import viz_api

    assert viz_api.VIZ_MAX_ACTIVE == 4
    release, inside = threading.Event(), threading.Semaphore(0)

    def slow_draw(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        inside.release()
        release.wait(30)
        raise viz_run.VizError("not drawn in this test")

    monkeypatch.setattr(viz_run, "visualize", slow_draw)
    client = TestClient(app, base_url=BASE, headers={"Authorization": f"Bearer {TOKEN}"})
    url = "/api/exercises/vector-copy/viz"
    results: list[int] = []
    threads = [
        threading.Thread(target=lambda: results.append(client.post(url).status_code)) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for _ in range(4):
        assert inside.acquire(timeout=30), "four pictures should be drawing at once"
    fifth: list[int] = []
    extra = threading.Thread(target=lambda: fifth.append(client.post(url).status_code), daemon=True)
    extra.start()
    extra.join(15)  # a refusal is immediate; a fifth picture admitted would block on `release`
    release.set()
    extra.join(30)
    assert fifth == [429], f"a fifth picture while four are drawing: {fifth}"
    for thread in threads:
        thread.join(30)
    assert len(results) == 4 and 429 not in results


# ---- serving ---------------------------------------------------------------------------------------------


def test_a_shared_address_is_refused_without_the_hardened_layer() -> None:
    from tritonlab.cli.serve import check_sandbox

    assert check_sandbox("0.0.0.0", False, "no bwrap", allow_unhardened=False) is False
    assert check_sandbox("192.168.1.5", None, "unknown", allow_unhardened=False) is False
    assert check_sandbox("0.0.0.0", False, "no bwrap", allow_unhardened=True) is True
    assert check_sandbox("127.0.0.1", False, "no bwrap", allow_unhardened=False) is True
    assert check_sandbox("::1", False, "no bwrap", allow_unhardened=False) is True
    assert check_sandbox("0.0.0.0", True, "", allow_unhardened=False) is True


def test_a_busy_port_names_the_next_one() -> None:
    from tritonlab.cli.serve import bind

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        with pytest.raises(typer.BadParameter) as caught:
            bind("127.0.0.1", port)
        assert re.search(rf"\b{port + 1}\b", str(caught.value)), str(caught.value)
    finally:
        taken.close()


def test_events_resume_after_last_event_id(app) -> None:  # noqa: ANN001
    job = jobs.Job("run", "resume")
    for i in range(5):
        job.emit("output", {"text": f"line {i}"})
    job.finish()
    app.state.jobs._jobs[job.id] = job
    client = TestClient(app, base_url=BASE, headers={"Authorization": f"Bearer {TOKEN}"})

    def ids(headers: dict) -> list[tuple[int, str]]:
        text = client.get(f"/api/jobs/{job.id}/events", headers=headers).text
        return [(int(m[0]), m[1]) for m in re.findall(r"id: (\d+)\nevent: \w+\ndata: (.*)\n", text)]

    assert [i for i, _ in ids({})] == [0, 1, 2, 3, 4, 5]
    resumed = ids({"Last-Event-ID": "2"})
    assert [i for i, _ in resumed] == [3, 4, 5]
    assert json.loads(resumed[0][1]) == {"text": "line 3"}
    assert [i for i, _ in ids({"Last-Event-ID": "not-a-number"})][0] == 0


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stopped_server_exits_promptly_and_leaves_no_mount(tmp_path: Path, stop: signal.Signals) -> None:
    """Ctrl+C, and SIGTERM (systemd's `stop`, `kill`): the server exits within seconds and releases the sandbox
    on the way out; as root the runs folder, the warm children's run folders and the caches are mounts, and
    none may outlive it (uvicorn re-raises SIGTERM after its shutdown: its default action skipped the release)."""
    from conftest import detach_mounts_under, mounts_under

    env = dict(os.environ, TRITONLAB_HOME=str(tmp_path / "home"), TRITONLAB_COURSE=str(FIXTURE_COURSE))
    env["TRITONLAB_WORKSPACE"] = str(tmp_path / "ws")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tritonlab",
            "serve",
            "--port",
            "0",
            "--no-browser",
            "--backend",
            "interpreter",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        seen = []
        deadline = time.monotonic() + 120
        for line in proc.stdout:  # type: ignore[union-attr]
            seen.append(line)
            if "token=" in line:
                break
            assert time.monotonic() < deadline, "".join(seen)
        url = seen[-1].strip()
        assert url.startswith("http://"), "".join(seen)
        time.sleep(0.5)
        mounted = mounts_under(tmp_path)
        sent = time.monotonic()
        proc.send_signal(stop)
        code = proc.wait(timeout=15)
        assert time.monotonic() - sent < 10
        assert code in ((0, 1, -signal.SIGINT, 130) if stop == signal.SIGINT else (0,)), code
        left = mounts_under(tmp_path)
        assert not left, f"mounted while serving: {mounted}; left after: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        detach_mounts_under(tmp_path)  # a failed run's leftovers


def test_one_tritonlab_process_exiting_leaves_the_others_runs_working(tmp_path: Path) -> None:
    """Two processes of one user share the runs folder (here the CLI's background workers of two workspaces;
    `serve` beside them is the same). As root the folder is a shared bind of itself that each hardened sandbox
    sees run folders through; the first process to exit used to undo it, and every check of the other one,
    a correct solution too, then crashed with exit status 70 (found in a seed sweep, 2026-12-03). The last one
    to exit still leaves no mount."""
    from conftest import detach_mounts_under, mounts_under

    env = dict(os.environ, TRITONLAB_HOME=str(tmp_path / "home"), TRITONLAB_COURSE=str(FIXTURE_COURSE))
    env.update(TRITONLAB_DAEMON="1", TRITONLAB_DAEMON_IDLE="120", TRITONLAB_BACKEND="interpreter")
    env.pop("TRITONLAB_SANDBOX", None)  # the default: hardened where bubblewrap works

    def tl(workspace: str, *args: str) -> subprocess.CompletedProcess:
        (tmp_path / workspace).mkdir(exist_ok=True)
        run_env = dict(env, TRITONLAB_WORKSPACE=str(tmp_path / workspace))
        cmd = [sys.executable, "-m", "tritonlab", *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=run_env, cwd=tmp_path, timeout=180)

    def check(workspace: str) -> dict:
        done = tl(workspace, "check", "vector-copy", "--solution", "--json")
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return json.loads(done.stdout)

    try:
        assert check("ws-a")["passed"] and check("ws-b")["passed"]
        workers = json.loads(tl("ws-a", "daemon", "status", "--json").stdout)
        assert len(workers) == 2, workers
        first = next(w for w in workers if w["workspace"].endswith("ws-a"))
        os.kill(first["pid"], signal.SIGTERM)
        deadline = time.monotonic() + 20
        while Path(f"/proc/{first['pid']}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert check("ws-b")["passed"]  # the worker of ws-b still sees its run folders
        tl("ws-b", "daemon", "stop")
        deadline = time.monotonic() + 20
        while mounts_under(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not mounts_under(tmp_path)
    finally:
        tl("ws-b", "daemon", "stop")
        detach_mounts_under(tmp_path)


# ---- the sandbox: wall clock and not dumpable ------------------------------------------------------------


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    saved = os.environ.get("TRITONLAB_HOME")
    os.environ["TRITONLAB_HOME"] = str(tmp_path_factory.mktemp("guarantee-home"))
    z = sandbox.Zygote("interpreter")
    z.wait_ready()
    yield z
    z.close()
    if saved is None:
        os.environ.pop("TRITONLAB_HOME", None)
    else:
        os.environ["TRITONLAB_HOME"] = saved


def run_text(zygote: sandbox.Zygote, tmp_path: Path, code: str, limits: Limits) -> RunResult:
    file = tmp_path / "program.py"
    file.write_text(code)
    run_dir = runfolder.new_run_dir()
    (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(file), "argv": []}))
    return zygote.start(run_dir, limits).wait()


def test_the_wall_clock_kills_a_sleeping_run(zygote: sandbox.Zygote, tmp_path: Path) -> None:
    """A sleeping program uses no CPU, so only the wall clock can end it (the CPU limit is far away)."""
    limits = Limits(wall_seconds=1.5, cpu_seconds=600)
    file = tmp_path / "sleeper.py"
    file.write_text("import time\nprint('asleep', flush=True)\ntime.sleep(1000)\n")
    run_dir = runfolder.new_run_dir()
    (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(file), "argv": []}))
    run = zygote.start(run_dir, limits)
    done: list[RunResult] = []
    waiter = threading.Thread(target=lambda: done.append(run.wait()), daemon=True)
    waiter.start()
    waiter.join(10)
    if not done:  # fail fast instead of sleeping for 1000 s
        run.stop()
        waiter.join(10)
        pytest.fail("the wall clock did not end a sleeping run within 10 s (limit: 1.5 s)")
    result = done[0]
    assert result.timed_out and "asleep" in result.output
    assert 1.4 < result.seconds < 8, result.seconds


def test_a_sleeping_check_gets_a_timeout_verdict(zygote: sandbox.Zygote, tmp_path: Path) -> None:
    learner = tmp_path / "sleepy.py"
    learner.write_text("import time\n\n\ndef vector_copy(x):\n    time.sleep(1000)\n")
    exercise = load_course(FIXTURE_COURSE).exercise("vector-copy")
    started = time.monotonic()
    verdict = pipeline.check(exercise, learner, "interpreter", zygote, seed=3, timeout=2)
    assert time.monotonic() - started < 20
    assert not verdict.passed and verdict.failures[0].kind == "timeout", verdict


def test_the_cpu_limit_stops_a_busy_loop_before_the_wall_clock(
    zygote: sandbox.Zygote, tmp_path: Path
) -> None:
    limits = Limits(wall_seconds=20, cpu_seconds=1)  # stopped by SIGXCPU within ~1-6 s
    result = run_text(zygote, tmp_path, "while True:\n    pass\n", limits)
    assert not result.timed_out and result.signal in (signal.SIGXCPU, signal.SIGKILL), result
    assert result.seconds < 15, result.seconds


PR_GET_DUMPABLE = 3


def test_runs_are_not_dumpable(zygote: sandbox.Zygote, tmp_path: Path) -> None:
    code = (
        "import ctypes, os\n"
        f"print('dumpable', ctypes.CDLL(None, use_errno=True).prctl({PR_GET_DUMPABLE}, 0, 0, 0, 0))\n"
        "print('uid', os.getuid())\n"
    )
    result = run_text(zygote, tmp_path, code, Limits(wall_seconds=30))
    assert "dumpable 0" in result.output, result.output
    # this process is dumpable, so the check above is not vacuous
    assert ctypes.CDLL(None).prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1


# ---- guards: off-by-one writes and out-of-bounds reads ---------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_guards_catch_one_element_past_either_end(dtype: str) -> None:
    import torch

    from tritonlab.grading import guards
    from tritonlab.grading.patterns import OUTPUT_GUARD, POISON

    g = guards.guarded_empty(10, getattr(torch, dtype), "cpu", "out", OUTPUT_GUARD, POISON)
    assert g.violations() is None
    g.interior.fill_(1)  # writing every element of the interior is fine
    assert g.violations() is None
    g.buffer[g.guard + g.numel] = 7  # the first element past the end: a `<=` mask
    found = g.violations()
    assert found is not None and found["after"] == [10] and found["before"] == [] and found["count"] == 1
    g.buffer[g.guard - 1] = 7  # the element just before the start
    found = g.violations()
    assert found["before"] == [-1] and found["after"] == [10] and found["count"] == 2
    g.buffer[-1] = 7  # and the last guard element
    assert g.violations()["count"] == 3


def test_a_value_read_from_the_input_guard_is_an_out_of_bounds_read() -> None:
    import numpy as np

    from tritonlab.grading import contracts
    from tritonlab.grading.contracts import compare
    from tritonlab.grading.patterns import INPUT_GUARD

    expected = np.arange(8, dtype=np.float64)
    raw = contracts.to_storage(expected, "float32")
    raw.view(np.uint32)[5] = INPUT_GUARD["float32"]  # the kernel loaded one lane from the guard
    result = {
        "function": "fn",
        "device_type": "cpu",
        "outputs": [{"dtype": "float32", "shape": [8], "device_type": "cpu", "guarded": True}],
        "arrays": [raw],
        "launches": [],
    }
    case = contracts.Case("n=8")
    failures = compare.compare_values(case, result, expected, "float32", 1e-6, 1e-6)
    assert [f.kind for f in failures] == ["out-of-bounds-read"], failures
    assert "[5]" in failures[0].message and "outside the input" in failures[0].message
    # the same value at the same place, when the output is right everywhere else, is the only problem
    clean = {**result, "arrays": [contracts.to_storage(expected, "float32")]}
    assert compare.compare_values(case, clean, expected, "float32", 1e-6, 1e-6) == []


# ---- bench-protocol grading on a fake clock --------------------------------------------------------------


def load_function(path: Path, name: str):  # noqa: ANN201
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"learner_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return getattr(module, name)


def test_bench_protocol_is_graded_on_a_fake_clock(tmp_path: Path) -> None:
    import numpy as np

    from tritonlab.grading.contracts import bench_protocol as bp

    solution = next(
        Path(__file__).resolve().parent.parent.glob("course/*/exercises/bench-protocol/solution.py")
    )
    fn = load_function(solution, "median_time_ms")
    for case in bp.cases(np.random.default_rng(1), "interpreter"):
        started = time.perf_counter()
        data = bp.run_case(fn, {"extra": case.extra}, None)["json"]
        assert time.perf_counter() - started < 0.1, "simulated work must not sleep"  # 150 ms outlier included
        assert data["fake_clock"] is True
        assert bp.check(case, {"data": data}) == [], case.name
        timed = case.extra["durations"][case.extra["warmup"] : case.extra["warmup"] + case.extra["rep"]]
        assert abs(data["value"] - sorted(timed)[len(timed) // 2]) < 1.0, (case.name, data)
    assert time.perf_counter() - started < 60  # the real clocks are back
    real_clock = tmp_path / "own_clock.py"
    real_clock.write_text(
        "import statistics\nfrom time import perf_counter\n\n\n"
        "def median_time_ms(fn, warmup=10, rep=50):\n"
        "    for _ in range(warmup):\n        fn()\n    times = []\n"
        "    for _ in range(rep):\n        t = perf_counter()\n        fn()\n"
        "        times.append((perf_counter() - t) * 1e3)\n    return statistics.median(times)\n"
    )
    case = bp.cases(np.random.default_rng(1), "interpreter")[3]  # the outlier case, synchronous
    data = bp.run_case(load_function(real_clock, "median_time_ms"), {"extra": case.extra}, None)["json"]
    assert data["fake_clock"] is False and bp.check(case, {"data": data}) == [], data


def test_hardened_runs_are_not_dumpable_and_have_a_user_name(tmp_path: Path) -> None:
    """The hardened layer sets dumpable back to 1 to write its uid map, so it must clear it again. Its user
    has no passwd entry: getpass.getuser() (torch.compile asks it) must still answer. A PATH folder it may
    not search must not turn a missing tool into PermissionError (torch.compile's nvcc probe, on the H200)."""
    from tritonlab.runs import hardening

    saved = os.environ.get("TRITONLAB_SANDBOX")
    os.environ["TRITONLAB_SANDBOX"] = "auto"
    try:
        works, why = hardening.decide("interpreter")
    finally:
        if saved is None:
            os.environ.pop("TRITONLAB_SANDBOX", None)
        else:
            os.environ["TRITONLAB_SANDBOX"] = saved
    if not works:
        pytest.skip(f"no hardened layer on this machine: {why}")
    code = (
        f"import ctypes, getpass\nprint('dumpable', ctypes.CDLL(None).prctl({PR_GET_DUMPABLE}, 0, 0, 0, 0))\n"
        "print('user', getpass.getuser())\n"
        "import subprocess\ntry:\n    subprocess.run(['tritonlab-no-such-tool'])\n"
        "except FileNotFoundError:\n    print('tool: not found')\n"
        "except PermissionError:\n    print('tool: permission denied')\n"
    )
    file = tmp_path / "program.py"
    file.write_text(code)
    file.chmod(0o644)
    tmp_path.chmod(0o755)
    locked = tmp_path / "locked-bin"  # on PATH, visible in the run, not searchable by its user
    locked.mkdir(mode=0o700)
    saved_path = os.environ["PATH"]
    os.environ["PATH"] = f"{locked}{os.pathsep}{saved_path}"
    try:
        z = sandbox.Zygote("interpreter", hardened=True, read_only=(tmp_path,))
    finally:
        os.environ["PATH"] = saved_path
    try:
        z.wait_ready()
        run_dir = runfolder.new_run_dir()
        (run_dir / "job.json").write_text(json.dumps({"mode": "run", "file": str(file), "argv": []}))
        result = z.start(run_dir, Limits(wall_seconds=30)).wait()
    finally:
        z.close()
    assert "dumpable 0" in result.output, result.output
    assert f"user {RUN_USER_NAME}" in result.output, result.output
    assert "tool: not found" in result.output, result.output  # a locked PATH folder is left out of the run's
