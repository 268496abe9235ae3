"""The per-user check daemon itself (cli/daemon.py says what it is for, where it lives, who may reach it and
when it ends): one long-lived `Service` answering check requests on a unix socket, one thread per connection,
and `main`, what `python -m tritonlab.cli.daemon_server KEY BACKEND WORKSPACE` runs (holding the key's lock).

Only this process imports the service (and, through its zygote, torch and triton); the client never does.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from tritonlab.cli.daemon import folder

_PROCESS_STARTED = time.monotonic()  # the daemon start's phases in its log count from here

DEFAULT_IDLE_S = 600.0
MAX_REQUEST = 1 << 16
MAX_OUTPUT = 64 << 10  # what a verdict carries of the run's output


def idle_seconds() -> float:
    try:
        return float(os.environ.get("TRITONLAB_DAEMON_IDLE", DEFAULT_IDLE_S))
    except ValueError:
        return DEFAULT_IDLE_S


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
