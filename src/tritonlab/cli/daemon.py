"""The per-user check daemon one-shot `tritonlab check` commands reuse: `python -m tritonlab.cli.daemon KEY BACKEND`.

A one-shot `tritonlab check` on a GPU used to pay, every time, for what a long-lived server pays once: the GPU
probe (a subprocess importing torch and creating a CUDA context), a zygote importing torch and triton, a
CUDA context per run, and the cases made in NumPy in the CLI process. The daemon is a long-lived `Service` (the
same object `serve` and `watch` hold) behind a unix socket: its zygote keeps warm single-use children (runs/pool.py:
CUDA context created, no learner code loaded; each serves one run and exits), it draws the next seed of each
exercise ahead and makes its cases in the background, and it judges like the web server does. The CLI side
(`check_through_daemon`) imports nothing but the standard library: no torch, triton or NumPy.

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
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tritonlab import config

_PROCESS_STARTED = time.monotonic()  # the daemon start's phases in its log count from here

DEFAULT_IDLE_S = 600.0
CONNECT_WAIT_S = 20.0
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes
MAX_REQUEST = 1 << 16
MAX_OUTPUT = 64 << 10  # what a verdict carries of the run's output
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


def idle_seconds() -> float:
    try:
        return float(os.environ.get("TRITONLAB_DAEMON_IDLE", DEFAULT_IDLE_S))
    except ValueError:
        return DEFAULT_IDLE_S


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


# ---- client side: stdlib only ---------------------------------------------------------------------------


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
            [sys.executable, "-m", "tritonlab.cli.daemon", k, requested or "", str(root)],
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


# ---- daemon side ------------------------------------------------------------------------------------------


def peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


class CheckServer:
    """One long-lived Service answering check requests, one thread per connection."""

    def __init__(self, k: str, requested: str | None, root: Path | None = None) -> None:
        self.requested, self.idle_s, self.root = requested, idle_seconds(), root
        self.service = None
        self.problem: dict | None = None  # why the service could not start (sent to every client)
        self.ready = threading.Event()
        self.active = 0
        self.last_check = time.monotonic()  # when the last check was answered: the idle clock
        self.lock = threading.Lock()
        self.path = folder() / f"{k}.sock"
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # we hold the lock: a socket file left here belongs to a daemon that is gone
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self.listener.bind(str(self.path))
        finally:
            os.umask(old)
        self.listener.listen(16)
        self.listener.settimeout(1.0)
        threading.Thread(target=self._start_service, daemon=True).start()

    def _start_service(self) -> None:
        from tritonlab.content.course import CourseError
        from tritonlab.service import BackendError, ExecutorError, Service

        began = _PROCESS_STARTED  # the phases below: seconds since the daemon's module was loaded
        marks: dict[str, float] = {"thread_s": time.monotonic() - began}
        try:
            service = Service(backend=self.requested, executor="local", workspace_dir=self.root)
            marks["service_s"] = time.monotonic() - began
            service.warm_up()  # the zygote imports torch (while the GPU probe runs) and fills its pool
            marks["warm_up_s"] = time.monotonic() - began
            _ = service.choice
            marks["backend_s"] = time.monotonic() - began
            self.service = service
        except CourseError as exc:
            self.problem = {"error": "course", "detail": str(exc)}
        except (BackendError, ExecutorError) as exc:
            self.problem = {"error": "backend", "detail": str(exc)}
        except Exception as exc:  # noqa: BLE001 - the client prints it and checks locally
            self.problem = {"error": "unavailable", "detail": f"{type(exc).__name__}: {exc}"}
        self.ready.set()
        if (
            self.service is not None
        ):  # the start's phases, in its log (make gpu-verify's first check reads it)
            with contextlib.suppress(Exception):
                self.service.zygote().wait_ready()
                marks["worker_ready_s"] = time.monotonic() - began
            line = {"daemon_start": {k: round(v, 3) for k, v in marks.items()}}
            print(json.dumps(line), file=sys.stderr, flush=True)

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                conn = None
            if conn is not None:
                if peer_uid(conn) != os.getuid():
                    conn.close()
                else:
                    with self.lock:
                        self.active += 1
                    threading.Thread(target=self._client, args=(conn,), daemon=True).start()
            with self.lock:
                if self.active:
                    continue
                broken = self.ready.is_set() and self.problem is not None
                if broken or time.monotonic() - self.last_check > self.idle_s:  # status asks do not count
                    return
            if not self.path.exists():  # `daemon stop`, or its TRITONLAB_HOME deleted: nobody can reach it
                return

    def _client(self, conn: socket.socket) -> None:
        control = False  # a status/stop request, not a check
        try:
            with conn:
                conn.settimeout(30.0)
                line = b""
                while not line.endswith(b"\n") and len(line) < MAX_REQUEST:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    line += chunk
                conn.settimeout(None)
                try:
                    msg = json.loads(line)
                except ValueError:
                    msg = None
                if not isinstance(msg, dict):
                    self._send(conn, {"final": True, "error": "unavailable", "detail": "malformed request"})
                    return
                try:
                    control = msg.get("op") in ("status", "stop")
                    answer = self._control(msg) if control else self._answer(conn, msg)
                except OSError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the client checks in its own process and says why
                    answer = {"final": True, "error": "unavailable", "detail": f"{type(exc).__name__}: {exc}"}
                self._send(conn, answer)
                conn.shutdown(socket.SHUT_RDWR)  # wakes this connection's watcher (blocked in recv)
        except OSError:
            pass  # the client went away
        finally:
            with self.lock:
                self.active -= 1
                if not control:
                    self.last_check = time.monotonic()

    @staticmethod
    def _send(conn: socket.socket, msg: dict) -> None:
        conn.sendall((json.dumps(msg) + "\n").encode())

    def _control(self, msg: dict) -> dict:
        """`tritonlab daemon status|stop`: who this daemon is; stop removes the socket, so the serve loop ends
        once the checks in flight are answered."""
        service = self.service
        with self.lock:
            busy = self.active - 1  # this connection is not a check
            idle = time.monotonic() - self.last_check if not busy else 0.0
        info = {
            "final": True,
            "pid": os.getpid(),
            "backend": service.backend if service is not None else self.requested,
            "hardened": bool(service.hardened) if service is not None else None,
            "workspace": str(self.root) if self.root else None,
            "checks_in_flight": busy,
            "idle_s": round(idle, 1),
            "ends_after_idle_s": self.idle_s,
        }
        if msg.get("op") == "stop":
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            info["stopping"] = True
        return info

    def _answer(self, conn: socket.socket, msg: dict) -> dict:
        self.ready.wait()
        service = self.service
        if service is None:
            return {"final": True, **(self.problem or {"error": "unavailable", "detail": "no service"})}
        try:
            exercise = service.exercise(str(msg.get("exercise")))
        except KeyError:
            known = [e.id for e in service.course.exercises()]
            return {"final": True, "error": "no_exercise", "known": known}
        if msg.get("solution"):
            target = exercise.solution
        elif msg.get("file"):
            target = Path(str(msg["file"]))
        else:
            target = service.learner_file(exercise, start=Path(str(msg.get("cwd") or "/")))
        self._send(conn, {"checking": str(target), "backend": service.backend, "daemon": os.getpid()})
        runs: list = []
        gone = threading.Event()

        def watch_client() -> None:  # the client sends nothing more: EOF means it went away (Ctrl-C)
            with contextlib.suppress(OSError):
                conn.recv(1)
            gone.set()
            for run in list(runs):
                run.stop()

        threading.Thread(target=watch_client, daemon=True).start()

        def queued(position: int) -> None:
            if gone.is_set():
                raise InterruptedError("the client went away")
            self._send(conn, {"queued": position})

        def judged(verdict) -> None:  # noqa: ANN001 - the verdict, before the timing run of a passing GPU check
            if verdict.passed and service.backend == "gpu" and not gone.is_set():
                self._send(conn, {"verdict": verdict.to_json(), "output": verdict.output[-MAX_OUTPUT:]})

        seed = msg.get("seed")
        try:
            verdict = service.check(
                exercise,
                file=target,
                seed=int(seed) if isinstance(seed, int) else None,
                record=bool(msg.get("record")),
                on_wait=queued,
                on_start=runs.append,
                speed=not gone.is_set(),
                on_verdict=judged,
            )
        except InterruptedError:
            return {"final": True, "error": "unavailable", "detail": "the client went away"}
        runs.clear()  # finished: the connection closing now must not stop anything
        from tritonlab.service import speed_line

        return {
            "final": True,
            "verdict": verdict.to_json(),
            "output": verdict.output[-MAX_OUTPUT:],
            "speed_line": speed_line(verdict.speed) if verdict.speed else None,
        }

    def close(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.listener.close()
        if self.service is not None:
            self.service.close()


def main() -> None:
    k, requested = sys.argv[1], sys.argv[2] or None
    root = Path(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else None
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # `kill`: clean up (socket, zygote) on the way out
    lock = open(folder() / f"{k}.lock", "a")  # noqa: SIM115 - held for the daemon's whole life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another daemon for this key is starting or running: the client connects to that one
    server = CheckServer(k, requested, root)
    try:
        server.serve()
    finally:
        server.close()


if __name__ == "__main__":
    main()
