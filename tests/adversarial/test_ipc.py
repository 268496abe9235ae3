"""Shared memory and message stores a run leaves behind (issues 17 and 31): SysV shared memory, message queues
and semaphores, a POSIX message queue and a POSIX shared-memory object each die with the run, so the next run
finds none and the host never sees them. Under both layers, like every attack (tests/adversarial/): basic
(TRITONLAB_SANDBOX=basic, no bubblewrap) and auto (hardened where the probe passes)."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import MODES, Bench, Case, bench_in_mode, no_leak  # noqa: E402

KINDS = ("sysv-shm", "sysv-msg", "sysv-sem", "posix-mq", "posix-shm")
CASE = Case(
    "shared memory and message queues left for the next run",
    "ipc_leftovers.py",
    "a private IPC namespace and /dev/shm per run",
    no_leak(),
    "run",
    20,
)
SYSV = {"sysv-shm": ("shm", "-M"), "sysv-msg": ("msg", "-Q"), "sysv-sem": ("sem", "-S")}


def key_of(bench: Bench) -> int:
    return 0x17000000 | int(bench.token, 16)  # as learners/ipc_leftovers.py makes it


def name_of(bench: Bench) -> str:
    return f"tritonlab-ipc-{bench.token}"


def _librt() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    return libc if hasattr(libc, "mq_open") else ctypes.CDLL(ctypes.util.find_library("rt"), use_errno=True)


def host_sees(bench: Bench) -> dict[str, bool]:
    """Which of the bench's objects this (the host's) process can see."""
    seen = {}
    for kind, (table, _) in SYSV.items():
        lines = Path(f"/proc/sysvipc/{table}").read_text().splitlines()[1:]
        seen[kind] = any(int(line.split()[0]) == key_of(bench) for line in lines)
    rt = _librt()
    queue = rt.mq_open(f"/{name_of(bench)}".encode(), os.O_RDONLY | os.O_NONBLOCK)
    seen["posix-mq"] = queue >= 0
    if queue >= 0:
        rt.mq_close(queue)
    seen["posix-shm"] = Path("/dev/shm", name_of(bench)).exists()
    return seen


def remove_from_host(bench: Bench) -> None:
    """Containment failed: leave nothing on the machine for other tests or people."""
    for _, flag in SYSV.values():
        subprocess.run(["ipcrm", flag, hex(key_of(bench))], check=False, capture_output=True)
    _librt().mq_unlink(f"/{name_of(bench)}".encode())
    Path("/dev/shm", name_of(bench)).unlink(missing_ok=True)


@pytest.fixture(scope="module", params=MODES)
def bench(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    if request.param == "auto" and not shutil.which("bwrap"):
        pytest.skip("TRITONLAB_SANDBOX=auto: bubblewrap (bwrap) is not installed; `make system-deps`")
    for b in bench_in_mode(request.param, tmp_path_factory.mktemp(f"ipc-{request.param}")):
        yield b
        remove_from_host(b)


def lines_of(output: str, kind: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(f"{kind}: ")]


def test_ipc_objects_do_not_outlive_the_run(bench: Bench) -> None:
    assert not any(host_sees(bench).values()), "the bench's names are fresh: nothing may exist yet"
    first = bench.run(CASE)
    for kind in KINDS:  # the attack ran: each kind was made, none found
        assert lines_of(first.outcome.output, kind)[-1] == f"{kind}: left", first.outcome.output
    second = bench.run(CASE)
    output = second.outcome.output
    leaked = [line for kind in KINDS for line in lines_of(output, kind) if "LEAK" in line]
    assert not leaked, f"TRITONLAB_SANDBOX={os.environ['TRITONLAB_SANDBOX']}: the next run found {leaked}"
    seen = host_sees(bench)
    assert not any(seen.values()), f"the host sees a run's objects: {[k for k, v in seen.items() if v]}"
    assert second.problem is None and not second.problems(), second.problems()


# ---- layer 1 without root: the run's own user namespace gives it the IPC namespace and /dev/shm -----------

AS_NOBODY = r"""
import ctypes, json, os, sys, threading, time

from tritonlab.runs import basicwalls  # imported first: nobody cannot read this interpreter's files

run_dir, key, name, threaded = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
os.setgroups([])
os.setgid(65534)
os.setuid(65534)  # a server started by a normal user: no CAP_SYS_ADMIN
before = os.readlink("/proc/self/ns/ipc")
if threaded:  # a GPU warm child after CUDA started its threads
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
ipc, shm = basicwalls.private_ipc(run_dir)
libc = ctypes.CDLL(None, use_errno=True)
segment = libc.shmget(key, 4096, 0o1000 | 0o600)
with open(f"/dev/shm/{name}", "w") as f:
    f.write("posix shared memory of a run")
after = os.readlink("/proc/self/ns/ipc")
print(json.dumps({"ipc": ipc, "shm": shm, "before": before, "after": after, "uid": os.getuid(), "segment": segment}))
sys.stdout.flush()
sys.stdin.readline()  # alive (and its objects with it) until the test has looked
"""


def unprivileged_user_namespaces() -> bool:
    probe = "import ctypes, os; os.setuid(65534); os._exit(ctypes.CDLL(None).unshare(0x10000000) != 0)"
    return subprocess.run([sys.executable, "-c", probe], check=False).returncode == 0


@pytest.mark.parametrize("threaded", [False, True], ids=["single-threaded", "multithreaded"])
def test_a_basic_run_without_root_gets_its_own_ipc_namespace(threaded: bool) -> None:
    """What `TRITONLAB_SANDBOX=basic` gives a server run by a normal user (here `nobody`): unshare(CLONE_NEWIPC)
    alone needs CAP_SYS_ADMIN, so the run makes a user namespace of its own, mapped to the same user. A
    multithreaded process cannot (Linux refuses it), and says so instead of pretending."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to become the unprivileged user nobody")
    if not unprivileged_user_namespaces():
        pytest.skip(
            "this kernel refuses user namespaces to unprivileged users: layer 1 shares the host's IPC"
        )
    top = Path(tempfile.mkdtemp(prefix="tritonlab-ipc-"))  # pytest's own folder is closed to nobody
    top.chmod(0o755)
    run_dir = top / "run"
    run_dir.mkdir()
    os.chown(run_dir, 65534, 65534)
    token = os.urandom(3).hex()
    key, name = 0x17000000 | int(token, 16), f"tritonlab-ipc-{token}"
    child = subprocess.Popen(
        [sys.executable, "-c", AS_NOBODY, str(run_dir), str(key), name, "1" if threaded else "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        report = json.loads(child.stdout.readline())
        lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
        on_host = any(int(line.split()[0]) == key for line in lines), Path("/dev/shm", name).exists()
        assert report["uid"] == 65534 and report["segment"] >= 0, report
        if threaded:
            assert (report["ipc"], report["shm"]) == (False, False), report
            assert report["after"] == report["before"] and on_host == (True, True), (report, on_host)
        else:
            assert (report["ipc"], report["shm"]) == (True, True), report
            assert report["after"] != report["before"], report  # a namespace of its own
            assert on_host == (False, False), f"the host sees the run's objects (SysV, POSIX): {on_host}"
            assert (run_dir / "tmp" / name).exists()  # its /dev/shm is its own folder, removed with it
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        subprocess.run(["ipcrm", "-M", hex(key)], check=False, capture_output=True)
        Path("/dev/shm", name).unlink(missing_ok=True)
        shutil.rmtree(top, ignore_errors=True)
