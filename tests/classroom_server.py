"""A real `tritonlab serve --classroom` in a subprocess, for the deployment tests (proxy, nginx, backups): a class
made with the real CLI, learners with known passwords (a CSV roster), the server on loopback with the
interpreter backend, stopped by its process group at the end."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "a-long-password-1"


def classroom_env(home: Path, database_url: str | None = None, **extra: str) -> dict[str, str]:
    env = dict(
        os.environ,
        TRITONLAB_HOME=str(home),
        TRITONLAB_BACKEND="interpreter",
        TRITONLAB_LANG="en",
        PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **extra,
    )
    env.pop("TRITONLAB_DATABASE_URL", None)
    env.pop("TRITONLAB_TRUSTED_PROXIES", None)
    if database_url:
        env["TRITONLAB_DATABASE_URL"] = database_url
    return env


def cli(env: dict[str, str], *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tritonlab", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def make_class(env: dict[str, str], learners: tuple[str, ...], folder: Path) -> dict:
    """`classroom init` and a roster of `learners`, each with PASSWORD; returns the teacher's account."""
    made = cli(env, "classroom", "init", "--name", "Deployed class", "--json")
    assert made.returncode == 0, made.stderr
    roster = folder / "roster.csv"
    roster.write_text("".join(f"{name},{name.title()},learner,{PASSWORD}\n" for name in learners))
    added = cli(env, "classroom", "add", "--csv", str(roster))
    assert added.returncode == 0, added.stderr
    return json.loads(made.stdout)["teacher"]


class ClassroomServer:
    """`python -m tritonlab.web serve --classroom --port 0` with `args`; `base` is its http://127.0.0.1:PORT."""

    def __init__(self, env: dict[str, str], args: tuple[str, ...] = ()) -> None:
        self.env, self.args = env, args
        self.proc: subprocess.Popen | None = None
        self.base = ""
        self.output: list[str] = []

    def start(self, timeout: float = 180) -> ClassroomServer:
        argv = [sys.executable, "-m", "tritonlab.web", "serve", "--classroom", "--port", "0", "--no-browser"]
        self.proc = subprocess.Popen(
            [*argv, "--allow-unhardened", *self.args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in self.proc.stdout], daemon=True).start()  # type: ignore[union-attr]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            self.output.append(line)
            found = re.search(r"serving the course on 127\.0\.0\.1:(\d+)", line)
            if found:
                self.base = f"http://127.0.0.1:{found.group(1)}"
                return self
        self.stop()
        pytest.fail("serve --classroom did not start: " + "".join(self.output))

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def client_from(address: str, base: str, **kwargs: object) -> httpx.Client:
    """An HTTP client whose connections leave from the loopback `address` (127.0.0.0/8 is all this host's)."""
    transport = httpx.HTTPTransport(local_address=address, verify=kwargs.pop("verify", True))  # type: ignore[arg-type]
    return httpx.Client(base_url=base, transport=transport, timeout=httpx.Timeout(60), **kwargs)  # type: ignore[arg-type]


def log_in(client: httpx.Client, username: str, password: str, origin: str, **headers: str) -> httpx.Response:
    return client.post(
        "/api/login",
        json={"username": username, "password": password},
        headers={"Origin": origin, **headers},
    )
