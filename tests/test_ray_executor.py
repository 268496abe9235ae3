"""`--executor ray` against a REAL local Ray cluster: two nodes on loopback (127.0.0.2, 127.0.0.3), token
auth, interpreter backend.

The session fixture starts a head and a second node with `ray start` (each offering one
`tritonlab_interpreter` unit), and at the end ends exactly the processes that cluster started, by pid.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import RAY_AUTH as AUTH  # noqa: E402 - the session's token, made before ray was imported

ray = pytest.importorskip("ray", reason="ray is not installed: `pip install 'tritonlab[ray]'` to run these")

from tritonlab.runs import backend as backends  # noqa: E402
from tritonlab.runs import executor as executors  # noqa: E402
from tritonlab.runs import hardening  # noqa: E402
from tritonlab.runs.limits import Limits  # noqa: E402
from tritonlab.runs.ray_executor import driver, remote  # noqa: E402
from tritonlab.service import Service  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
LEARNERS = ROOT / "tests" / "fixtures" / "learners"
RAY = Path(sys.executable).with_name("ray")
HEAD_MARK = "tritonlab_test_head"
# Fast failure detection for the node-loss test (defaults take about 30 s to call a node dead).
FAST_HEALTH = {
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "3",
    "RAY_health_check_initial_delay_ms": "500",
}
SLEEPER = """
import time
print("started", flush=True)
time.sleep(60)

def vector_copy(x):
    return x
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parent_links() -> dict[int, int]:
    links = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            links[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return links


def cluster_pids(marks: tuple[str, ...]) -> set[int]:
    """The processes our `ray start` calls made (their command lines name our temp dir or GCS port), and
    everything below them (workers, zygotes)."""
    found = set()
    for pid in parent_links():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(mark in cmdline for mark in marks):
            found.add(pid)
    links = parent_links()
    grew = True
    while grew:
        below = {pid for pid, parent in links.items() if parent in found} - found
        grew = bool(below)
        found |= below
    return found - {os.getpid()}


@pytest.fixture(scope="session")
def cluster() -> dict:
    """A two-node Ray cluster on loopback with token auth, for this test session."""
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="tl-ray-", dir="/tmp"))
    token = AUTH / "token"
    port = free_port()
    env = dict(os.environ)
    env.update(FAST_HEALTH)
    env.update(
        {
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN_PATH": str(token),
            "RAY_USAGE_STATS_ENABLED": "0",
            "TRITONLAB_HOME": str(tmp / "home"),
        }
    )
    env.pop("RAY_ADDRESS", None)
    # Loopback addresses, but not 127.0.0.1: `ray start` on Linux swaps exactly that one (and `localhost`)
    # for the machine's routable address. Ray still listens on all interfaces; the token guards that.
    common = ["--num-cpus", "1", "--disable-usage-stats"]
    head = [
        str(RAY),
        "start",
        "--head",
        "--port",
        str(port),
        "--temp-dir",
        str(tmp / "ray"),
        "--include-dashboard=false",
        "--resources",
        json.dumps({"tritonlab_interpreter": 1, HEAD_MARK: 1}),
        "--node-ip-address",
        "127.0.0.2",
        *common,
    ]
    second = [
        str(RAY),
        "start",
        "--address",
        f"127.0.0.2:{port}",
        "--resources",
        json.dumps({"tritonlab_interpreter": 1}),
        "--node-ip-address",
        "127.0.0.3",
        *common,
    ]
    marks = (str(tmp), f"127.0.0.2:{port}", f"--gcs_server_port={port}")
    saved = {"RAY_ADDRESS": os.environ.get("RAY_ADDRESS")}
    try:
        for argv in (head, second):
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        os.environ["RAY_ADDRESS"] = f"127.0.0.2:{port}"
        print(f"\nray cluster (2 nodes, token auth) up in {time.monotonic() - started:.1f} s")
        yield {"port": port, "env": env, "tmp": tmp}
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        pids = cluster_pids(marks)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_service(cluster: dict):
    # The workers keep a warm single-use child (forced on the interpreter, as on a GPU by default), passed
    # to them like TRITONLAB_SANDBOX: CI exercises the path a GPU worker takes.
    # One run at a time per worker here (TRITONLAB_SLOTS, passed to them too): these tests fill the two
    # workers; several runs per worker: test_two_owners_checks_share_one_worker and tests/test_ray_slots.py.
    wanted = {"TRITONLAB_POOL": "2", "TRITONLAB_SLOTS": "1"}
    saved = {key: os.environ.get(key) for key in wanted}
    os.environ.update(wanted)
    try:
        service = Service(backend="interpreter", executor="ray", allow_unhardened_workers=not hardened_here())
        service.warm_up()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    yield service
    service.close()


def hardened_here() -> bool:
    """Can this machine run the hardened layer (bubblewrap)? If not (the GPU box has no bubblewrap), the tests
    allow unhardened workers explicitly and say so; the refusal itself is tested with TRITONLAB_SANDBOX=basic."""
    report = hardening.probe("interpreter")
    if not report["hardened"]:
        print(f"\nno hardened sandbox on this machine, workers allowed without it: {report['reason']}")
    return bool(report["hardened"])


def sleeper(tmp_path: Path) -> Path:
    path = tmp_path / "sleeper.py"
    path.write_text(SLEEPER)
    return path


# ---- no cluster needed ------------------------------------------------------------------------------------


def test_unhardened_workers_are_refused_unless_allowed() -> None:
    pool = object.__new__(driver.RayPool)
    pool.versions = {"course": "c" * 64, "code": "d" * 64}
    report = {"ok": True, "hardened": False, "sandbox_reason": "basic", "versions": pool.versions}
    pool.options = executors.RemoteOptions()
    assert "no hardened sandbox" in pool._problem(report)
    pool.options = executors.RemoteOptions(allow_unhardened=True)
    assert pool._problem(report) == ""
    assert pool._problem({"ok": False, "error": "torch missing"}).startswith("its sandbox worker did not")


def test_a_worker_with_other_versions_is_refused_with_the_reason() -> None:
    """A worker grades from the seed with its own course and contracts: one whose course content or tritonlab
    code differs from the driver's (or that reports none) is not used, and the reason says which."""
    pool = object.__new__(driver.RayPool)
    pool.options = executors.RemoteOptions()
    pool.versions = {"course": "c" * 64, "code": "d" * 64}
    report = {"ok": True, "hardened": True, "versions": dict(pool.versions)}
    assert pool._problem(report) == ""
    other_code = report | {"versions": {"course": "c" * 64, "code": "e" * 64}}
    why = pool._problem(other_code)
    assert "tritonlab code differs" in why and "course" not in why.split(":")[0], why
    assert "eeeeeeeeeeee" in why and "dddddddddddd" in why  # the worker's and the server's, named
    other_course = report | {"versions": {"course": "f" * 64, "code": "d" * 64}}
    assert "course content differs" in pool._problem(other_course)
    assert "no course or code version" in pool._problem({"ok": True, "hardened": True})


def test_lost_twice_means_nothing_was_graded(tmp_path: Path) -> None:
    """Both attempts lose their worker: WorkerLost, which the service turns into a `worker-lost` verdict."""

    class Pool:
        def __init__(self) -> None:
            self.workers = [
                remote.WorkerRef(None, {"actor": k, "hostname": k, "ip": "x", "node_id": k}) for k in "ab"
            ]

        def acquire(
            self,
            exclude: set[str],
            timeout: float | None = None,
            exclusive: bool = False,
            idle_wait: float | None = None,
        ) -> remote.WorkerRef:
            left = [w for w in self.workers if w.key not in exclude]
            if not left:
                raise executors.WorkerLost("no other tritonlab worker is left in the cluster")
            return left[0]

        def forget(self, worker: object) -> None:
            pass

        def cache_for(self, run_dir: Path) -> None:  # a directory it did not hand out: no shared cache
            return None

    def lose(*args: object) -> dict:
        raise remote._Lost("ActorDiedError")

    (tmp_path / "job.json").write_text(json.dumps({"mode": "run", "file": str(LEARNERS / "good.py")}))
    handle = remote.RemoteRun(Pool(), tmp_path, Limits())
    handle._attempt = lose
    lines: list[str] = []
    with pytest.raises(executors.WorkerLost) as lost:
        handle.wait(lines.append)
    assert "nothing was graded" in str(lost.value) and len(lost.value.nodes) == 2
    assert "running again elsewhere" in "".join(lines)

    service = object.__new__(Service)
    service.executor, service._choice = "ray", backends.Choice("interpreter", "test")
    verdict = service._lost_verdict(_exercise(), LEARNERS / "good.py", 7, lost.value).to_json()
    assert not verdict["passed"] and verdict["executor"] == "ray"
    assert verdict["failures"][0]["kind"] == "worker-lost"
    assert "worker lost, nothing was graded" in verdict["failures"][0]["message"]


def _exercise():  # noqa: ANN202
    from tritonlab.content.course import load_course

    return load_course().exercise("vector-copy")


# ---- on the cluster ---------------------------------------------------------------------------------------


def test_cli_check_through_ray(cluster: dict) -> None:
    started = time.monotonic()
    env = dict(os.environ) | {"TRITONLAB_EXECUTOR": "ray"}
    if not hardened_here():
        env["TRITONLAB_RAY_ALLOW_UNHARDENED"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "tritonlab", "check", "vector-copy", "--solution", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    verdict = json.loads(proc.stdout)  # one JSON object on stdout: Ray's own logs stay off it
    assert verdict["passed"] and verdict["executor"] == "ray" and "ray node" in verdict["node"]
    print(f"\n`tritonlab check --executor ray` (one worker started): {time.monotonic() - started:.1f} s")


def test_a_worker_without_the_hardened_sandbox_is_not_used(cluster: dict, monkeypatch) -> None:
    monkeypatch.setenv("TRITONLAB_SANDBOX", "basic")  # forwarded to the workers: their self-check fails
    service = Service(backend="interpreter", executor="ray", remote_workers=1)
    try:
        with pytest.raises(executors.ExecutorError, match="no hardened sandbox"):
            service.warm_up()
    finally:
        service.close()


def test_a_worker_whose_course_differs_is_not_used(cluster: dict, monkeypatch, tmp_path: Path) -> None:
    """This driver's course differs from the workers' by one line of one exercise.toml: every worker is
    refused, and RayPool.info says why. (Runs before `ray_service` holds the cluster's two units.)"""
    from tritonlab import config

    course = tmp_path / "course"
    shutil.copytree(config.course_dir(), course, ignore=shutil.ignore_patterns("__pycache__"))
    toml = next(course.glob("*/exercises/vector-copy/exercise.toml"))
    toml.write_text(toml.read_text() + "\n# changed on this server only\n")
    monkeypatch.setenv("TRITONLAB_COURSE", str(course))  # the driver's; its workers keep the repository's
    service = Service(
        backend="interpreter", executor="ray", remote_workers=1, allow_unhardened_workers=not hardened_here()
    )
    try:
        with pytest.raises(executors.ExecutorError, match="course content differs"):
            service.warm_up()
        refused = service.remote().info["refused"]
        assert len(refused) == 1 and "course content differs" in refused[0]["reason"], refused
        assert "tritonlab code" not in refused[0]["reason"]  # only what differs is named
    finally:
        service.close()


HOLDER = """
import time
print("started", flush=True)
time.sleep(150)

def vector_copy(x):
    return x
"""


def test_two_owners_checks_share_one_worker(cluster: dict, monkeypatch, tmp_path: Path) -> None:
    """TRITONLAB_SLOTS=3 in the driver, passed to the worker, which sizes itself with it (its node was started
    with 2, tests/conftest.py): the one worker reports 3 slots, the pool's capacity and the service's queue are
    3, and two learners' checks run on that worker at the same time — each check child printed `started` and
    is still holding (it sleeps 150 s) when the other printed it. With one run per worker the second would
    start only after the first ended. (Runs before `ray_service` holds the cluster's two units.)"""
    monkeypatch.setenv("TRITONLAB_SLOTS", "3")
    service = Service(
        backend="interpreter", executor="ray", remote_workers=1, allow_unhardened_workers=not hardened_here()
    )
    file = tmp_path / "holder.py"
    file.write_text(HOLDER)
    handles: dict[str, object] = {}
    shown: dict[str, list[str]] = {"ana": [], "ben": []}
    threads = []
    try:
        service.warm_up()
        pool = service.remote()
        assert [w.report["slots"] for w in pool.workers.values()] == [3], pool.info
        assert pool.capacity == 3 and service.gate().size == 3
        exercise = service.exercise("vector-copy")
        for name in shown:
            learner = copy.copy(service)  # a classroom learner's view of the one service (classroom/room.py)
            learner.run_owner = ("learner", name)
            threads.append(
                threading.Thread(
                    target=learner.check,
                    args=(exercise,),
                    kwargs={
                        "file": file,
                        "record": False,
                        "speed": False,
                        "timeout": 180,
                        "on_start": lambda h, n=name: handles.setdefault(n, h),
                        "on_output": shown[name].append,
                    },
                    daemon=True,
                )
            )
        for t in threads:
            t.start()
        deadline = time.monotonic() + 90
        while not all("started" in "".join(out) for out in shown.values()):
            assert time.monotonic() < deadline, f"the two checks did not run at once: {shown}"
            assert all(t.is_alive() for t in threads), "a check ended before the other started"
            time.sleep(0.05)
        assert all(t.is_alive() for t in threads)  # both children hold their slots now
        workers = {handles[n]._worker.key for n in shown}
        assert workers == set(pool.workers), workers  # the one worker runs both
    finally:
        for h in handles.values():
            h.stop()
        for t in threads:
            t.join(60)
        service.close()
    assert not any(t.is_alive() for t in threads)


def wire(value: object) -> int:
    """Bytes of data in what an actor call carried (strings and bytes by length, anything else 8)."""
    if isinstance(value, bytes | str):
        return len(value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value)
    if isinstance(value, dict):
        return sum(wire(k) + wire(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(wire(v) for v in value)
    return 8


# The exercises whose check inputs are the largest: on a GPU matmul-bias (770 MB of float64 cases) and
# vector-copy (72 MB shipped per run before), on the interpreter attention-forward, matmul-bias and vector-copy
# (0.45-0.50 MB of .npy inputs per run before). Each check takes 5-40 s here, the whole course would take
# minutes; what is shipped no longer depends on the cases at all (docs/scale.md).
LARGEST_INPUTS = ("vector-copy", "matmul-bias", "attention-forward")


def test_a_check_ships_its_seed_not_its_tensors(ray_service: Service, monkeypatch) -> None:
    """Every actor call of a check, measured on the wire by this test (not by the product's own figure): at
    most 1 MB each way (the issue's bound), and no case data at all (64 kB: the source and the verdict)."""
    calls: list[tuple[str, int, int]] = []
    attempt = remote.RemoteRun._attempt

    def measured(self, worker, args, emit):  # noqa: ANN001, ANN202
        reply = attempt(self, worker, args, emit)
        calls.append((type(self).__name__, wire(args), wire(reply)))
        return reply

    monkeypatch.setattr(remote.RemoteRun, "_attempt", measured)
    for exercise_id in LARGEST_INPUTS:
        calls.clear()
        exercise = ray_service.exercise(exercise_id)
        verdict = ray_service.check(exercise, file=exercise.solution, seed=5, record=False, speed=False)
        assert verdict.passed, verdict.to_json()
        out, back = max(c[1] for c in calls), max(c[2] for c in calls)
        print(f"\n{exercise_id}: {len(calls)} actor call(s), at most {out} B out, {back} B back")
        assert out <= 1_000_000 and back <= 1_000_000, calls
        assert out <= 64_000 and back <= 64_000, calls
        remote_timings = verdict.timings["remote"]
        assert remote_timings["payload_mb"] <= out / 1e6 + 0.001 and remote_timings["reply_mb"] <= 0.064


def test_same_verdicts_through_ray_as_locally(ray_service: Service, home: Path) -> None:
    exercise = ray_service.exercise("vector-copy")
    local = Service(backend="interpreter")
    try:
        for learner in ("good.py", "floor_grid.py"):
            here = local.check(exercise, file=LEARNERS / learner, seed=11, record=False).to_json()
            there = ray_service.check(exercise, file=LEARNERS / learner, seed=11, record=False).to_json()
            assert here["executor"] == "local" and there["executor"] == "ray"
            assert "ray node" in there["node"]
            for key in ("passed", "cases", "failures", "notes", "seed", "file", "backend"):
                assert here[key] == there[key], (learner, key)
            assert here["passed"] is (learner == "good.py")
    finally:
        local.close()


def test_remote_checks_start_warm_and_report_their_phases(ray_service: Service) -> None:
    """Three checks at once on two workers: each run and replay starts in a warm child made ahead; the third
    waits its turn and its worker drew its seed and made its cases ahead; every verdict says where its time
    went and what crossed the wire."""
    exercise = ray_service.exercise("vector-copy")
    verdicts: list[dict] = []
    threads = [
        threading.Thread(
            target=lambda: verdicts.append(
                ray_service.check(exercise, file=LEARNERS / "good.py", record=False).to_json()
            )
        )
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert len(verdicts) == 3 and all(v["passed"] for v in verdicts), verdicts
    for v in verdicts:
        t = v["timings"]
        for key in ("queue_wait_s", "cases_s", "check_run_s", "replay_s", "judge_s", "total_s"):
            assert isinstance(t[key], float), (key, t)
        assert t["check_warm_child"] is True and t["replay_warm_child"] is True, t
        phases = t["remote"]  # the whole check's actor call, graded on the worker
        assert phases["attempts"] == 1, phases
        assert t["check_run_s"] + t["replay_s"] <= phases["worker.worker_s"] <= phases["remote_s"] + 0.01
        assert 0 < phases["payload_mb"] < 0.064 and 0 < phases["reply_mb"] < 0.064, phases
    queued = max(verdicts, key=lambda v: v["timings"]["queue_wait_s"])
    # its worker had drawn its next seed of vector-copy and made those cases after its previous check
    assert queued["timings"]["queue_wait_s"] > 0.2 and queued["timings"]["cases_ahead"] is True
    assert len({v["seed"] for v in verdicts}) == 3 and all(isinstance(v["seed"], int) for v in verdicts)
    overheads = [
        v["timings"]["remote"]["remote_s"] - v["timings"]["check_run_s"] - v["timings"]["replay_s"]
        for v in verdicts
    ]
    print(f"\nray round trip beyond the check's two sandboxed runs: max {max(overheads) * 1000:.0f} ms")


def test_stop_kills_the_remote_run_within_a_second(ray_service: Service, tmp_path: Path) -> None:
    exercise = ray_service.exercise("vector-copy")
    handles, output, stopped_at = [], [], []

    def on_output(text: str) -> None:
        output.append(text)
        if "started" in "".join(output) and not stopped_at:
            stopped_at.append(time.monotonic())
            handles[0].stop()

    verdict = ray_service.check(
        exercise, file=sleeper(tmp_path), record=False, on_output=on_output, on_start=handles.append
    )
    took = time.monotonic() - stopped_at[0]
    print(f"\nremote Stop: the check ended {took:.2f} s after stop()")
    assert took < 1.5
    assert not verdict.passed and "started" in verdict.output


def test_a_full_cluster_queues_and_says_where(ray_service: Service, tmp_path: Path) -> None:
    exercise = ray_service.exercise("vector-copy")
    file = sleeper(tmp_path)
    handles: list = []
    positions: list[int] = []
    threads = [
        threading.Thread(
            target=ray_service.check,
            args=(exercise,),
            kwargs={"file": file, "record": False, "on_start": handles.append},
        )
        for _ in range(2)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(handles) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(handles) == 2  # both workers busy

    def third() -> None:
        ray_service.check(
            exercise, file=file, record=False, on_wait=positions.append, on_start=handles.append
        )

    waiter = threading.Thread(target=third)
    waiter.start()
    time.sleep(1.5)
    assert positions and positions[0] == 1  # queued, first in line: told, not hung
    for h in list(handles):
        h.stop()
    deadline = time.monotonic() + 30
    while len(handles) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    for h in list(handles):
        h.stop()
    for t in [*threads, waiter]:
        t.join(30)
        assert not t.is_alive()


def test_a_node_killed_mid_check_is_retried_on_the_other(ray_service: Service, tmp_path: Path) -> None:
    """SIGKILL the second node (its raylet and the worker) while it runs a check: the check runs again on the
    head's worker and passes; the dead worker is never chosen again."""
    pool = ray_service.remote()
    head_node = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and HEAD_MARK in n["Resources"])
    pool.prefer = lambda w: (w.report["node_id"] == head_node, w.runs)  # first attempt: the second node
    slow_good = tmp_path / "slow_good.py"
    slow_good.write_text(
        'import time\nprint("started", flush=True)\ntime.sleep(4)\n' + (LEARNERS / "good.py").read_text()
    )
    killed: list[float] = []
    handles: list = []

    def on_output(text: str) -> None:
        if "started" in text and not killed:
            victim = handles[0]._worker.report
            assert victim["node_id"] != head_node
            raylet = parent_links()[victim["pid"]]
            for pid in (raylet, victim["pid"]):
                os.kill(pid, signal.SIGKILL)
            killed.append(time.monotonic())

    exercise = ray_service.exercise("vector-copy")
    verdict = ray_service.check(
        exercise, file=slow_good, record=False, on_output=on_output, on_start=handles.append
    )
    print(f"\nnode lost: the retried check ended {time.monotonic() - killed[0]:.1f} s after the SIGKILL")
    assert killed
    assert verdict.passed, verdict.to_json()
    assert "was lost" in verdict.output and "running again elsewhere" in verdict.output
    assert head_node[:8] in verdict.node
    assert pool.capacity == 1
