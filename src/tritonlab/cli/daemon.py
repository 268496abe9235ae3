"""The per-user check daemon one-shot `tritonlab check` commands reuse: this module is its client (what the
CLI imports: the standard library and `tritonlab.config` only); the daemon itself is cli/daemon_server.py
(`python -m tritonlab.cli.daemon_server KEY BACKEND WORKSPACE`, started by `connect`).

A one-shot `tritonlab check` on a GPU used to pay, every time, for what a long-lived server pays once: the GPU
probe (a subprocess importing torch and creating a CUDA context), a zygote importing torch and triton, a
CUDA context per run, and the cases made in NumPy in the CLI process. The daemon is a long-lived `Service` (the
same object `serve` and `watch` hold) behind a unix socket: its zygote keeps warm single-use children (runs/pool.py:
CUDA context created, no learner code loaded; each serves one run and exits), it draws the next seed of each
exercise ahead and makes its cases in the background, and it judges like the web server does. The CLI side
(this module, called by cli/check.py) imports nothing but the standard library: no torch, triton or NumPy.

Isolation is the service's: learner code runs only in the zygote's single-use children, never in the daemon;
the daemon reads run directories as hostile data like any parent; runs use the learner's own Triton cache.

- Where: `TRITONLAB_HOME/daemon/` (0700), socket `KEY.sock` (0600), lock `KEY.lock`, log `KEY.log`. The key
  hashes the requested backend, the Python, the environment that shapes a run, and the files of tritonlab
  and of the course (names and mtimes): an upgrade, an edited course or another environment gets a fresh
  daemon, never a stale one.
- Who: only this user (folder 0700, socket 0600, and the peer's uid is checked on every connection).
- When: started by the first check that wants it; ends after TRITONLAB_DAEMON_IDLE seconds (600) with no
  client, or at once when its service cannot start (the client then prints why). Two checks starting at once
  still get one daemon (the lock).
- Which: every local check by default, on either backend and under either sandbox layer (on the
  interpreter it saves the zygote's torch + triton import: about 2 s of a 4 s check on a 2-core machine);
  TRITONLAB_DAEMON=0 turns it off (the test suite does, except in the daemon's own tests). Never for a
  remote executor: that check runs in the command. Under the hardened layer a zygote shows its runs one
  workspace folder read-only — the workspace of the folder the check was asked from, as in the command — so
  that folder is part of the key: one daemon per workspace.
- `tritonlab daemon status|stop` lists and ends this user's daemons; a daemon whose socket file is gone
  (`stop`, or its TRITONLAB_HOME deleted) ends within a second.
- A client that goes away (Ctrl-C) has its run stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tritonlab import config

CONNECT_WAIT_S = 20.0
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes
# Environment variables that change what a run does (the daemon is started with the client's environment).
ENV_PREFIXES = ("TRITONLAB_", "TRITON_", "CUDA_", "NVIDIA_", "PYTHON", "LD_", "LC_", "HIP_", "ROCR_")
ENV_NAMES = ("PATH", "HOME", "LANG", "TMPDIR", "USER")


class Unavailable(Exception):
    """No daemon answered: the caller checks in its own process instead."""


def wanted(requested: str | None, executor: str | None = None) -> bool:
    """Whether a one-shot `tritonlab check` goes through the daemon: every local check unless
    TRITONLAB_DAEMON=0 (`requested`, the backend, does not change the answer; kept for the callers)."""
    if (executor or os.environ.get("TRITONLAB_EXECUTOR") or "local").strip().lower() != "local":
        return False
    return os.environ.get("TRITONLAB_DAEMON", "").strip() != "0"


def folder() -> Path:
    path = config.home() / "daemon"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _tree_fingerprint(root: Path, digest: hashlib._Hash) -> None:
    for file in sorted(root.rglob("*")):
        if "__pycache__" in file.parts:
            continue
        with contextlib.suppress(OSError):
            digest.update(f"{file.relative_to(root)}:{file.stat().st_mtime_ns}\n".encode())


def workspace_root(start: Path | None = None) -> Path:
    """The workspace of a check asked from `start` (default: the current folder): the folder a hardened
    zygote shows its runs read-only, as the command itself would."""
    return config.workspace_root(start)


def key(requested: str | None, root: Path | None = None) -> str:
    backend = (requested or config.default_backend()).strip().lower()
    env = sorted((k, v) for k, v in os.environ.items() if k in ENV_NAMES or k.startswith(ENV_PREFIXES))
    where = str(root or workspace_root())
    digest = hashlib.sha256(json.dumps([backend, sys.executable, sys.version, env, where]).encode())
    _tree_fingerprint(Path(__file__).resolve().parents[1], digest)
    _tree_fingerprint(config.course_dir(), digest)
    return digest.hexdigest()[:16]


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        return sock
    except OSError:
        sock.close()
        return None


def _lock_is_free(k: str) -> bool:
    with open(folder() / f"{k}.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        fcntl.flock(lock, fcntl.LOCK_UN)
        return True


def connect(requested: str | None) -> socket.socket:
    """A connection to this user's daemon for `requested`, started now if there is none; Unavailable else."""
    root = workspace_root()
    k = key(requested, root)
    path = folder() / f"{k}.sock"
    if len(str(path).encode()) > MAX_SOCKET_PATH:
        raise Unavailable(f"{path} is too long for a unix socket")
    sock = _connect(path)
    if sock is not None:
        return sock
    with open(folder() / f"{k}.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tritonlab.cli.daemon_server", k, requested or "", str(root)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=tempfile.gettempdir(),
            start_new_session=True,  # outlives this command; never in its terminal's process group
        )
    deadline = time.monotonic() + CONNECT_WAIT_S
    while time.monotonic() < deadline:
        sock = _connect(path)
        if sock is not None:
            return sock
        if proc.poll() is not None and _lock_is_free(k):
            break  # it ended and no other daemon holds the key: it failed (its log says why)
        time.sleep(0.02)
    raise Unavailable(f"the background worker did not start (see {folder() / k}.log)")


def request(msg: dict, on_event: Callable[[dict], None]) -> dict:
    """Send one check to the daemon; `on_event` gets its progress messages; returns its final message."""
    sock = connect(msg.get("backend"))
    with sock, sock.makefile("rb") as replies:
        try:
            sock.sendall((json.dumps(msg) + "\n").encode())
        except OSError as exc:
            raise Unavailable(f"the background worker refused the check ({exc})") from None
        for line in replies:
            reply = json.loads(line)
            if reply.get("final"):
                return reply
            on_event(reply)
    raise Unavailable("the background worker ended before it answered")


def control(op: str) -> list[dict]:
    """Send `op` ("status" or "stop") to every daemon of this user that answers; sockets nobody answers on
    (a daemon killed with SIGKILL) are removed."""
    answers = []
    for path in sorted(folder().glob("*.sock")):
        sock = _connect(path)
        if sock is None:
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        with sock, sock.makefile("rb") as replies:
            try:
                sock.settimeout(10.0)
                sock.sendall((json.dumps({"op": op}) + "\n").encode())
                reply = json.loads(replies.readline() or b"{}")
            except (OSError, ValueError):
                continue
        if isinstance(reply, dict) and "pid" in reply:
            answers.append({"key": path.stem, **{k: v for k, v in reply.items() if k != "final"}})
    return answers


def wait_gone(pids: list[int], seconds: float) -> list[int]:
    """Wait up to `seconds` for these processes to end; the ones still running."""
    deadline = time.monotonic() + seconds
    left = list(pids)
    while left and time.monotonic() < deadline:
        left = [pid for pid in left if _running(pid)]
        if left:
            time.sleep(0.05)
    return left


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (its starter has not reaped it yet) has ended
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
