"""The per-user check daemon one-shot `tritonlab check` commands go through (cli/daemon.py), forced on the
interpreter: the client imports no torch, triton or NumPy; checks share one warm daemon whose runs are
single-use processes; a client that goes away has its run stopped; an idle daemon ends."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURE_COURSE, LEARNERS

from tritonlab.cli import daemon


@pytest.fixture
def forced(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRITONLAB_DAEMON", "1")
    monkeypatch.setenv("TRITONLAB_POOL", "1")  # the GPU's single-use warm children, on the interpreter
    monkeypatch.setenv("TRITONLAB_SANDBOX", "basic")
    monkeypatch.setenv("TRITONLAB_DAEMON_IDLE", "20")
    monkeypatch.setenv("TRITONLAB_COURSE", str(FIXTURE_COURSE))
    monkeypatch.setenv("TRITONLAB_BACKEND", "interpreter")
    return home


IDENTITY = (  # what a learner run prints of itself: pid, PID namespace, start time (clock ticks since boot)
    "os.getpid(), os.readlink('/proc/self/ns/pid'), "
    "open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19]"
)


def run_gone(run: tuple[str, str, str]) -> bool:
    """Whether a learner run that said (pid, its PID namespace, its start time) has ended. In a namespace of its
    own (runs/pidns.py) a run is PID 2, a number that names another process out here, and a later namespace
    (the next warm child's) may get the same inode number; a process of that namespace that started at that
    tick is the run."""
    pid, ns, started = run
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                same_ns = os.readlink(entry / "ns" / "pid") == ns
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if same_ns and stat[19] == started and stat[0] != "Z":
                return False
    return True


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its parent counts as gone
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(predicate, seconds: float = 15.0) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def check(file: Path, events: list[dict] | None = None) -> dict:
    msg = {"op": "check", "exercise": "vector-copy", "file": str(file), "record": False, "cwd": "/"}
    return daemon.request(msg, (events if events is not None else []).append)


def stop_daemon(events: list[dict]) -> None:
    for pid in {e["daemon"] for e in events if "daemon" in e}:
        os.kill(pid, 15)  # SIGTERM: the tests do not wait for the idle timeout


def test_wanted_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every local check goes through the daemon, on both backends and both sandbox layers; a cluster check
    and TRITONLAB_DAEMON=0 do not."""
    for name in ("TRITONLAB_DAEMON", "TRITONLAB_SANDBOX", "TRITONLAB_EXECUTOR", "TRITONLAB_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    assert daemon.wanted("gpu") and daemon.wanted("interpreter") and daemon.wanted(None)
    assert not daemon.wanted("gpu", executor="ray")  # a cluster check runs in the command
    monkeypatch.setenv("TRITONLAB_EXECUTOR", "ray")
    assert not daemon.wanted("interpreter")
    monkeypatch.delenv("TRITONLAB_EXECUTOR")
    monkeypatch.setenv("TRITONLAB_SANDBOX", "hardened")
    assert daemon.wanted("gpu") and daemon.wanted("interpreter")
    monkeypatch.setenv("TRITONLAB_DAEMON", "0")
    assert not daemon.wanted("gpu") and not daemon.wanted("interpreter")


def test_the_key_names_the_workspace(forced: Path, tmp_path: Path) -> None:
    """A hardened zygote shows its runs one workspace read-only: checks asked from two workspaces never share
    a daemon (the second would not see its own folder)."""
    one, two = tmp_path / "one", tmp_path / "two"
    from tritonlab.store.workspace import MARKER

    for folder in (one, two):
        (folder / "sub").mkdir(parents=True)
        (folder / MARKER).write_text("")
    assert daemon.workspace_root(one / "sub") == daemon.workspace_root(one) == one.resolve()
    assert daemon.key("interpreter", one.resolve()) != daemon.key("interpreter", two.resolve())


def test_the_key_changes_with_the_environment_and_the_course(
    forced: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = daemon.key("interpreter")
    assert daemon.key("interpreter") == first and daemon.key("gpu") != first
    monkeypatch.setenv("TRITONLAB_POOL", "3")
    assert daemon.key("interpreter") != first
    monkeypatch.setenv("TRITONLAB_POOL", "1")
    course = tmp_path / "course"
    subprocess.run(["cp", "-r", str(FIXTURE_COURSE), str(course)], check=True)
    monkeypatch.setenv("TRITONLAB_COURSE", str(course))
    before = daemon.key("interpreter")
    toml = next(course.rglob("exercise.toml"))
    os.utime(toml, ns=(toml.stat().st_atime_ns, toml.stat().st_mtime_ns + 10**9))  # an author's edit
    assert daemon.key("interpreter") != before


def test_the_cli_client_imports_no_torch_triton_or_numpy(forced: Path) -> None:
    """Two `tritonlab check` commands: the first starts the daemon, both are answered by it, and neither CLI
    process imports torch, triton or NumPy (read from the interpreter's own -X importtime record)."""
    argv = [sys.executable, "-X", "importtime", "-m", "tritonlab", "check", "vector-copy", "--solution"]
    for _ in range(2):
        done = subprocess.run([*argv, "--json"], capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads(done.stdout)["passed"]
        imported = {
            line.split("|")[-1].strip()
            for line in done.stderr.splitlines()
            if line.startswith("import time:")
        }
        assert "tritonlab.cli.daemon" in imported  # it went through the daemon ...
        heavy = {m for m in imported if m.split(".")[0] in ("torch", "triton", "numpy")}
        assert heavy == set(), heavy  # ... and loaded nothing heavy
        assert "tritonlab.service" not in imported and "tritonlab.grading.check.pipeline" not in imported
    socks = list((forced / "daemon").glob("*.sock"))
    assert len(socks) == 1
    assert stat.S_IMODE(socks[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(socks[0].parent.stat().st_mode) == 0o700
    # Through the daemon, as in the command itself: the text output and an unknown exercise.
    text = subprocess.run(argv, capture_output=True, text=True, timeout=240)
    assert text.returncode == 0 and "vector-copy" in text.stdout, text.stderr[-2000:]
    unknown = subprocess.run([*argv[:5], "check", "nope"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "vector-copy" in unknown.stderr  # names the known exercises


def test_daemon_runs_are_single_use_and_an_idle_daemon_ends(
    forced: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each check runs the learner's code in a process of its own that ends with it: two checks through the
    same daemon report two different process ids, both gone afterwards. A malformed request gets an error,
    never a crash, and the daemon goes on serving; left idle, it ends and removes its socket."""
    monkeypatch.setenv("TRITONLAB_DAEMON_IDLE", "3")
    learner = tmp_path / "learner.py"
    learner.write_text(f"import os\nprint('RUN-PID', {IDENTITY})\n" + (LEARNERS / "good.py").read_text())
    events: list[dict] = []
    sock = daemon.connect("interpreter")
    try:
        sock.sendall(b"not json\n")
        reply = json.loads(sock.makefile("rb").readline())
        assert reply["final"] and reply["error"] == "unavailable"
    finally:
        sock.close()
    try:
        runs = []
        for _ in range(2):
            reply = check(learner, events)
            assert reply["verdict"]["passed"], reply
            runs.append(tuple(reply["output"].split("RUN-PID", 1)[1].split()[:3]))
        daemons = {e["daemon"] for e in events if "daemon" in e}
        assert len(daemons) == 1, [e for e in events if "daemon" in e]  # one warm daemon answered both
        assert runs[0] != runs[1]  # two processes
        assert wait_until(lambda: all(run_gone(r) for r in runs), 10)  # both ended with their check
        if runs[0][1] == os.readlink("/proc/self/ns/pid"):  # no namespaces here: host pids
            assert daemons.isdisjoint(int(r[0]) for r in runs)
        socks = list((forced / "daemon").glob("*.sock"))
        assert wait_until(lambda: not alive(next(iter(daemons))), 40) and not socks[0].exists()
        # its log has the phases of its start, in order (make gpu-verify's first check reports them)
        (log,) = (forced / "daemon").glob("*.log")
        (line,) = [x for x in log.read_text().splitlines() if x.startswith('{"daemon_start"')]
        phases = json.loads(line)["daemon_start"]
        order = ["thread_s", "service_s", "warm_up_s", "backend_s", "worker_ready_s"]
        assert list(phases) == order and sorted(phases.values()) == [phases[k] for k in order], phases
    finally:
        stop_daemon([e for e in events if "daemon" in e and alive(e["daemon"])])


def test_a_client_that_goes_away_has_its_run_stopped(forced: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "run.pid"
    learner = tmp_path / "hang.py"
    learner.write_text(
        f"import os\nopen({str(pid_file)!r}, 'w').write(' '.join(map(str, ({IDENTITY}))))\n"
        + (LEARNERS / "hang.py").read_text()
    )
    sock = daemon.connect("interpreter")
    events: list[dict] = []
    try:
        msg = {"op": "check", "exercise": "vector-copy", "file": str(learner), "record": False, "cwd": "/"}
        sock.sendall((json.dumps(msg) + "\n").encode())
        events.append(json.loads(sock.makefile("rb").readline()))
        assert wait_until(lambda: pid_file.is_file() and len(pid_file.read_text().split()) == 3, 60)
        run = tuple(pid_file.read_text().split())
        assert not run_gone(run)
        sock.close()  # Ctrl-C in the CLI
        assert wait_until(lambda: run_gone(run), 15)
    finally:
        sock.close()
        stop_daemon(events)


def test_a_daemon_that_cannot_start_fails_fast(forced: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon, "key", lambda requested, root=None: "broken")
    monkeypatch.setattr(daemon.sys, "executable", "/bin/false")
    started = time.monotonic()
    with pytest.raises(daemon.Unavailable):
        daemon.connect("interpreter")
    assert time.monotonic() - started < 5


def test_a_worker_started_by_a_thread_that_ended_keeps_serving(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The zygote (and bubblewrap's monitor around a hardened one) asks to die with its parent, and Linux
    sends that signal when the *thread* that started it ends. The check daemon starts its worker from a
    start-up thread that ends, a web server from pooled request threads: the worker must outlive that
    thread (sandbox._Spawner). Checked with the layer this machine uses by default."""
    import threading

    from tritonlab.service import Service

    monkeypatch.setenv("TRITONLAB_COURSE", str(FIXTURE_COURSE))
    service = Service(backend="interpreter")
    try:
        starter = threading.Thread(target=service.warm_up)
        starter.start()
        starter.join()
        zygote = service.zygote()
        zygote.wait_ready()
        first = zygote.proc.pid
        time.sleep(1.0)  # a killed worker or jail monitor is gone by now
        exercise = service.exercise("vector-copy")
        verdict = service.check(exercise, file=LEARNERS / "good.py", record=False, speed=False)
        assert verdict.passed, (verdict.failures, verdict.output[-2000:])
        assert service.zygote().proc.pid == first  # the same worker served it: it was never restarted
    finally:
        service.close()


def test_hardened_checks_go_through_the_daemon_by_default(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nothing set, two `tritonlab check` commands from a workspace are answered by one background
    worker that runs them under the hardened layer (as the sandbox user, with the workspace's helper module
    importable), and `tritonlab daemon stop` ends it."""
    from tritonlab.runs import hardening

    for name in ("TRITONLAB_DAEMON", "TRITONLAB_SANDBOX", "TRITONLAB_POOL", "TRITONLAB_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRITONLAB_COURSE", str(FIXTURE_COURSE))
    monkeypatch.setenv("TRITONLAB_DAEMON_IDLE", "60")
    report = hardening.probe("interpreter")
    if not report["hardened"]:
        pytest.skip(f"needs the hardened layer (bubblewrap): {report['reason']}")
    from tritonlab.store.workspace import MARKER

    work = tmp_path / "work"
    work.mkdir()
    (work / MARKER).write_text("")
    (work / "copy_helper.py").write_text("BLOCK = 1024\n")
    learner = work / "mine.py"
    learner.write_text(
        "import os\nfrom copy_helper import BLOCK\nprint('RUN-UID', os.getuid(), 'BLOCK', BLOCK)\n"
        + (LEARNERS / "good.py").read_text()
    )
    argv = [sys.executable, "-m", "tritonlab", "--lang", "en"]
    try:
        for _ in range(2):
            done = subprocess.run(
                [*argv, "check", "vector-copy", "--file", str(learner), "--output"],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=240,
            )
            assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
            assert "RUN-UID 65534 BLOCK 1024" in done.stdout  # the sandbox user, the workspace visible
        status = subprocess.run(
            [*argv, "daemon", "status", "--json"], cwd=work, capture_output=True, text=True, timeout=60
        )
        daemons = json.loads(status.stdout)
        assert len(daemons) == 1, daemons
        assert daemons[0]["hardened"] is True and daemons[0]["workspace"] == str(work.resolve())
    finally:
        stopped = subprocess.run(
            [*argv, "daemon", "stop", "--json"], cwd=work, capture_output=True, text=True, timeout=60
        )
    pids = [a["pid"] for a in json.loads(stopped.stdout)]
    assert pids == [daemons[0]["pid"]]
    assert wait_until(lambda: not alive(pids[0]), 30)
    assert not list((home / "daemon").glob("*.sock"))
    text = subprocess.run([*argv, "daemon", "status"], capture_output=True, text=True, timeout=60)
    assert "No background check worker" in text.stdout


@pytest.mark.gpu
def test_gpu_checks_go_through_the_daemon_verdict_first(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU, by default: `tritonlab check` goes through the daemon, the CLI process imports no torch,
    triton or NumPy, and a passing check prints its verdict before its speed line."""
    for name in ("TRITONLAB_DAEMON", "TRITONLAB_POOL", "TRITONLAB_SANDBOX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRITONLAB_DAEMON_IDLE", "30")
    argv = [sys.executable, "-X", "importtime", "-m", "tritonlab", "--lang", "en", "check", "softmax"]
    for _ in range(2):
        done = subprocess.run(
            [*argv, "--solution", "--backend", "gpu"], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        lines = done.stdout.splitlines()
        verdict = next(i for i, line in enumerate(lines) if line.startswith("✔"))
        speed = next(i for i, line in enumerate(lines) if line.startswith("speed"))
        assert verdict < speed
        imported = {
            x.split("|")[-1].strip() for x in done.stderr.splitlines() if x.startswith("import time:")
        }
        assert "tritonlab.cli.daemon" in imported
        assert not {m for m in imported if m.split(".")[0] in ("torch", "triton", "numpy")}
    assert len(list((home / "daemon").glob("*.sock"))) == 1
