"""A per-user background worker that one-shot CLI commands reuse: `python -m tritonlab.runs.daemon KEY BACKEND`.

A one-shot `tritonlab check` on a GPU used to start its own zygote (torch + triton imports, seconds) and then
create a CUDA context for its run (more seconds), every time. The daemon keeps one warm zygote, with its pool
of warm single-use children (pool.py), alive between CLI calls. It is only a relay: it owns no run and reads no
run directory. It forwards the zygote protocol (JSON lines, see zygote.py) between the zygote and each client
connected on a unix socket, routes each reply to the client that started the run, and kills a client's runs
when that client goes away (Ctrl-C). The client side, `RemoteZygote`, is a `sandbox.Zygote` whose pipe is the
socket: the CLI still creates the run directory, streams the log, enforces the wall clock and output cap, and
judges the result itself.

- Where: `TRITONLAB_HOME/daemon/` (0700), socket `KEY.sock` (0600) and lock `KEY.lock`; the key hashes the
  backend, the pool size, the Python, the run environment (sandbox.child_environment) and the tritonlab code
  (file names and mtimes), so a changed install or environment gets a fresh daemon, never a stale one.
- Who: only this user can connect (the folder is 0700; the socket 0600; the peer's uid is checked as well).
- When: started on demand by the first CLI command that wants it; ends after TRITONLAB_DAEMON_IDLE seconds
  (default 600) with no client and no run, or when its zygote dies. Taking the lock first means two CLI
  commands starting at once still get one daemon.
- Which: TRITONLAB_DAEMON=1 forces it (also on the interpreter: the tests), 0 turns it off; by default it
  serves the gpu backend only, and never the hardened layer (whose zygote is per workspace and per server).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tritonlab import config
from tritonlab.runs import hardening, sandbox

DEFAULT_IDLE_S = 600.0
CONNECT_WAIT_S = 15.0
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes


def wanted(backend: str, hardened: bool) -> bool:
    if hardened:
        return False
    forced = os.environ.get("TRITONLAB_DAEMON", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    return backend == "gpu"


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


def code_fingerprint() -> str:
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for file in sorted(package.rglob("*.py")):
        with contextlib.suppress(OSError):
            digest.update(f"{file.relative_to(package)}:{file.stat().st_mtime_ns}\n".encode())
    return digest.hexdigest()


def key(backend: str, pool: int) -> str:
    env = sandbox.child_environment(backend)
    text = json.dumps([backend, pool, sys.executable, sorted(env.items()), code_fingerprint()])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---- client side ----------------------------------------------------------------------------------------


class _SocketProc:
    """What sandbox.Zygote uses of its Popen, over a connected socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.stdin = sock.makefile("wb")
        self.stdout = sock.makefile("rb")
        self.stderr = None

    def poll(self) -> int | None:
        return None

    def wait(self, timeout: float | None = None) -> int:
        return 0

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


class RemoteZygote(sandbox.Zygote):
    """The daemon's zygote, seen from a CLI process: the same start/stop/wait as a local one."""

    def __init__(self, backend: str, pool: int, sock: socket.socket, path: Path) -> None:
        self.backend, self.hardened, self.pool = backend, False, pool
        self.info: dict = {}
        self.dead = False
        self.visible: list[Path] = []
        # The background worker serves one user's own CLI checks: runs keep their per-process limits but are
        # not placed in per-run cgroups (this process cannot see the daemon's children to place them), and
        # reference solutions stay denied to them as in any basic-layer run.
        self.run_cgroups = False
        self.shared = False
        self.hidden: list[Path] = sorted(hardening.hidden_files())
        self.socket_path = path
        self._runs: dict[str, sandbox.Run] = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.proc = _SocketProc(sock)  # type: ignore[assignment]
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()
        self.proc.kill()
        self.dead = True


def _lock_is_free(k: str) -> bool:
    with open(folder() / f"{k}.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        fcntl.flock(lock, fcntl.LOCK_UN)
        return True


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        return sock
    except OSError:
        sock.close()
        return None


def connect(backend: str, pool: int) -> RemoteZygote:
    """The running daemon for this backend and environment, started now if there is none."""
    k = key(backend, pool)
    path = folder() / f"{k}.sock"
    if len(str(path).encode()) > MAX_SOCKET_PATH:
        raise sandbox.SandboxError(f"{path} is too long for a unix socket")
    sock = _connect(path)
    if sock is None:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tritonlab.runs.daemon", k, backend, str(pool)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(folder() / f"{k}.log", "ab"),  # noqa: SIM115 - handed to the daemon
            cwd=tempfile.gettempdir(),
            start_new_session=True,  # outlives this command; never in its terminal's process group
        )
        deadline = time.monotonic() + CONNECT_WAIT_S
        while sock is None and time.monotonic() < deadline:
            time.sleep(0.02)
            sock = _connect(path)
            if sock is None and proc.poll() is not None and _lock_is_free(k):
                break  # it ended, and no other daemon holds the key: it failed (its log says why)
        if sock is None:
            raise sandbox.SandboxError(f"the background worker did not start (see {folder() / k}.log)")
    return RemoteZygote(backend, pool, sock, path)


# ---- daemon side ----------------------------------------------------------------------------------------


def peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


class Relay:
    def __init__(self, k: str, backend: str, pool: int) -> None:
        self.backend, self.idle_s = backend, idle_seconds()
        self.sel = selectors.DefaultSelector()
        self.clients: dict[socket.socket, bytes] = {}
        self.owner: dict[str, socket.socket] = {}  # run id -> client that started it
        self.ready_line: bytes | None = None
        self.last_busy = time.monotonic()
        path = folder() / f"{k}.sock"
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # we hold the lock: a socket file left here belongs to a daemon that is gone
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self.listener.bind(str(path))
        finally:
            os.umask(old)
        self.listener.listen(16)
        self.path = path
        argv = [sys.executable, "-m", "tritonlab.runs.zygote", backend]
        if pool:
            argv += ["--pool", str(pool)]
        self.zygote = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=sandbox.child_environment(backend),
            cwd=tempfile.gettempdir(),
            start_new_session=True,
        )
        self.zygote_out = b""
        self.sel.register(self.listener, selectors.EVENT_READ, "listen")
        self.sel.register(self.zygote.stdout, selectors.EVENT_READ, "zygote")

    def send(self, conn: socket.socket, line: bytes) -> None:
        try:
            conn.sendall(line)
        except OSError:
            self.drop(conn)

    def to_zygote(self, line: bytes) -> None:
        assert self.zygote.stdin is not None
        self.zygote.stdin.write(line)
        self.zygote.stdin.flush()

    def drop(self, conn: socket.socket) -> None:
        if conn not in self.clients:
            return
        del self.clients[conn]
        with contextlib.suppress(KeyError, ValueError):
            self.sel.unregister(conn)
        conn.close()
        for run_id, who in list(self.owner.items()):
            if who is conn:  # the CLI went away (Ctrl-C, killed): its runs go too
                self.to_zygote((json.dumps({"op": "kill", "id": run_id}) + "\n").encode())
                del self.owner[run_id]
        self.last_busy = time.monotonic()

    def on_zygote(self) -> bool:
        assert self.zygote.stdout is not None
        chunk = os.read(self.zygote.stdout.fileno(), 65536)
        if not chunk:
            return False
        self.zygote_out += chunk
        while b"\n" in self.zygote_out:
            line, self.zygote_out = self.zygote_out.split(b"\n", 1)
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("ready"):
                self.ready_line = line + b"\n"
                for conn in list(self.clients):
                    self.send(conn, self.ready_line)
                continue
            run_id = msg.get("id", "")
            conn = self.owner.get(run_id)
            if "pid" not in msg:
                self.owner.pop(run_id, None)
                self.last_busy = time.monotonic()
            if conn is not None:
                self.send(conn, line + b"\n")
        return True

    def on_client(self, conn: socket.socket) -> None:
        try:
            chunk = conn.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            self.drop(conn)
            return
        buffer = self.clients[conn] + chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("op") == "run":
                self.owner[str(msg.get("id"))] = conn
            elif msg.get("op") == "kill" and self.owner.get(str(msg.get("id"))) is not conn:
                continue  # a client stops only its own runs
            self.to_zygote(line + b"\n")
        if conn in self.clients:
            self.clients[conn] = buffer

    def serve(self) -> None:
        while True:
            for selected, _ in self.sel.select(timeout=1.0):
                if selected.data == "listen":
                    conn, _ = self.listener.accept()
                    if peer_uid(conn) != os.getuid():
                        conn.close()
                        continue
                    self.clients[conn] = b""
                    self.sel.register(conn, selectors.EVENT_READ, "client")
                    if self.ready_line:
                        self.send(conn, self.ready_line)
                elif selected.data == "zygote":
                    if not self.on_zygote():
                        return  # the zygote died: so do we (clients see EOF)
                else:
                    self.on_client(selected.fileobj)  # type: ignore[arg-type]
            if self.clients or self.owner:
                self.last_busy = time.monotonic()
            elif time.monotonic() - self.last_busy > self.idle_s:
                return

    def close(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.listener.close()
        with contextlib.suppress(OSError):
            if self.zygote.stdin:
                self.zygote.stdin.close()  # EOF: the zygote kills every run and exits
        try:
            self.zygote.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.zygote.kill()


def main() -> None:
    k, backend, pool = sys.argv[1], sys.argv[2], int(sys.argv[3])
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    lock = open(folder() / f"{k}.lock", "a")  # noqa: SIM115 - held for the daemon's whole life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another daemon for this key is starting or running: the client connects to that one
    relay = Relay(k, backend, pool)
    try:
        relay.serve()
    finally:
        relay.close()


if __name__ == "__main__":
    main()
