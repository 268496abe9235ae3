"""Shared test helpers. Tests build what they need inline; these only start real processes."""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Ray reads its token auth once, when it is imported, and any test module may be the first to import it
# (tests/test_ray_slots.py imports the driver; collected first, it left the cluster tests of
# tests/test_ray_executor.py unable to join): the session's token file is made here, before any test module.
RAY_AUTH = Path(tempfile.mkdtemp(prefix="tl-ray-auth-", dir="/tmp"))
atexit.register(shutil.rmtree, RAY_AUTH, True)
(RAY_AUTH / "token").write_text(secrets.token_hex(32))
(RAY_AUTH / "token").chmod(0o600)
os.environ["RAY_AUTH_MODE"] = "token"
os.environ["RAY_AUTH_TOKEN_PATH"] = str(RAY_AUTH / "token")

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_COURSE = ROOT / "tests" / "fixtures" / "course"
LEARNERS = ROOT / "tests" / "fixtures" / "learners"


def pytest_configure(config: pytest.Config) -> None:
    """Never touch the real user data dir: every test process and child gets a private TRITONLAB_HOME."""
    if not os.environ.get("TRITONLAB_HOME_FOR_TESTS"):
        import tempfile

        os.environ["TRITONLAB_HOME_FOR_TESTS"] = tempfile.mkdtemp(prefix="tritonlab-tests-")
    os.environ.setdefault("TRITONLAB_HOME", os.environ["TRITONLAB_HOME_FOR_TESTS"])
    os.environ.pop("TRITONLAB_WORKSPACE", None)
    # No background check worker per test home (cli/daemon.py: each would outlive its test by 10 minutes);
    # tests/test_daemon.py turns it back on where it is the subject, and the wheel smoke test uses the default.
    os.environ.setdefault("TRITONLAB_DAEMON", "0")
    # Cheap password hashes for the tests (docs/testing.md): the production cost (config.ARGON2_DEFAULT) takes
    # ~60 ms per hash here, more under load; `serve --classroom` refuses a cost this low beyond loopback.
    os.environ.setdefault("TRITONLAB_ARGON2", "t=1,m=1024,p=1")
    # Two runs at once, whatever the machine (runs/capacity.py sizes the run queue from its cores and memory):
    # the queue tests fill exactly two slots; tests/test_capacity.py unsets it where the sizing is the subject.
    os.environ.setdefault("TRITONLAB_SLOTS", "2")
    config.stash[_INTERPRET_AT_START] = os.environ.get("TRITON_INTERPRET")


_INTERPRET_AT_START = pytest.StashKey["str | None"]()


@pytest.fixture
def interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    """TRITON_INTERPRET set while one test runs: kernels it decorates in-process become interpreted ones. The
    way to get that in-process; set at import it would reach every later test (pytest_collection_finish)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def pytest_collection_finish(session: pytest.Session) -> None:
    """No test module may set TRITON_INTERPRET while it is imported: Triton reads it when a kernel is decorated,
    so every later in-process kernel of the session would run on the interpreter, GPU tests included (the H200
    run 2026-12-04 (bda3280) lost five GPU tests to a module-level setdefault). Set it in a subprocess's env or
    with monkeypatch inside the test instead."""
    before = session.config.stash.get(_INTERPRET_AT_START, None)
    if os.environ.get("TRITON_INTERPRET") != before:
        raise pytest.UsageError(
            f"TRITON_INTERPRET changed from {before!r} to {os.environ.get('TRITON_INTERPRET')!r} while the test "
            "modules were collected: a test module sets it at import time (see tests/conftest.py)"
        )


def has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


GPU_NOT_RUN = "no NVIDIA GPU (run make test-gpu on a GPU machine)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """GPU tests are skipped with the reason, never silently deselected; the summary counts them."""
    gpu = [item for item in items if "gpu" in item.keywords]
    config.stash[_GPU_SKIPPED] = 0
    if not gpu or has_cuda():
        return
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {GPU_NOT_RUN}")
    for item in gpu:
        item.add_marker(skip)
    config.stash[_GPU_SKIPPED] = len(gpu)


_GPU_SKIPPED = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # noqa: ANN001
    deselected = [i for i in terminalreporter.stats.get("deselected", []) if "gpu" in i.keywords]
    count = config.stash.get(_GPU_SKIPPED, 0) - len(deselected)  # collection hooks run before -m deselects
    if count > 0:
        terminalreporter.write_line(f"{count} GPU tests not run: {GPU_NOT_RUN}", yellow=True)
    if deselected:
        terminalreporter.write_line(
            f"{len(deselected)} GPU tests deselected by -m; run them with make test-gpu on a GPU machine",
            yellow=True,
        )


@pytest.fixture(scope="session", autouse=True)
def _no_mount_outlives_the_run(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN202
    """Run as root, tests mount tmpfs run folders and caches under the temporary folder (some make run folders
    by hand, some kill servers on purpose); detach what is left at the end, so the next run can remove it.
    Whether the product itself releases its mounts is tested where it does (test_guarantees)."""
    yield
    detach_mounts_under(tmp_path_factory.getbasetemp())


def mounts_under(folder: Path) -> list[str]:
    """The mount points inside `folder`, innermost first."""
    from tritonlab.runs import runfolder

    inside = str(folder) + os.sep
    return sorted((m for m in runfolder.mount_points() if m.startswith(inside)), reverse=True)


def processes_with_argument(text: str) -> list[int]:
    """Host pids of the live processes with `text` among their command-line arguments: how a test finds a
    run's process from outside, since a run knows only its pid in its own PID namespace (runs/pidns.py)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if text.encode() in argv:
                found.append(int(entry))
    return found


def detach_mounts_under(folder: Path) -> None:
    from tritonlab.runs import runfolder

    for mount_point in mounts_under(folder):
        runfolder.unmount(mount_point)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private TRITONLAB_HOME (progress DB, runs) for this test, in-process and for children."""
    path = tmp_path / "home"
    monkeypatch.setenv("TRITONLAB_HOME", str(path))
    monkeypatch.delenv("TRITONLAB_WORKSPACE", raising=False)
    monkeypatch.delenv("TRITONLAB_BACKEND", raising=False)
    return path


@pytest.fixture
def fixture_course(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRITONLAB_COURSE", str(FIXTURE_COURSE))
    return FIXTURE_COURSE


def cli(
    *args: str,
    cwd: Path | None = None,
    input: str | None = None,
    timeout: float = 180,
    env: dict | None = None,
) -> subprocess.CompletedProcess:
    """Run the real entry point, `python -m tritonlab ...`, as a user would."""
    full_env = dict(os.environ) | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "tritonlab", *args],
        cwd=cwd,
        input=input,
        text=True,
        capture_output=True,
        timeout=timeout,
        env=full_env,
    )


@pytest.fixture(scope="session")
def postgres():  # noqa: ANN201
    """One PostgreSQL server for the whole test session (tests/classroom_pg.py); each test makes its own
    database with `postgres.new_database()`."""
    from classroom_pg import start_postgres

    yield from start_postgres()


@pytest.fixture(scope="session")
def oidc_provider():  # noqa: ANN201
    """One real OpenID provider (npm oidc-provider under Node.js) for the whole test session
    (tests/oidc_provider.py)."""
    from oidc_provider import start_provider

    yield from start_provider()


@pytest.fixture(params=["sqlite", "postgresql"])
def classroom_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The classroom database URL, once for SQLite and once for a real PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classroom.db'}"
    return request.getfixturevalue("postgres").new_database()
