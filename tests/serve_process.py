"""A real `tritonlab serve` process for the tests of issue 34 (what a request can make the server hold): started
on a free loopback port with a private TRITONLAB_HOME and the fixture course, its URL (and token) read from
what it prints, its RSS read from /proc, stopped with its whole process group at the end."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_COURSE = ROOT / "tests" / "fixtures" / "course"


def server_env(home: Path, **extra: str) -> dict[str, str]:
    return dict(
        os.environ,
        TRITONLAB_HOME=str(home),
        TRITONLAB_COURSE=str(FIXTURE_COURSE),
        TRITONLAB_BACKEND="interpreter",
        TRITONLAB_WORKSPACE=str(home / "ws"),
        PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **extra,
    )


class Served:
    """`tritonlab serve ARGS` on port 0; `base` and `token` once it printed its URL."""

    def __init__(self, env: dict[str, str], *args: str, preexec: Callable[[], None] | None = None) -> None:
        self.env, self.args, self.preexec = env, args, preexec
        self.proc: subprocess.Popen[str] | None = None
        self.base = self.token = ""
        self.output: list[str] = []

    def start(self, timeout: float = 240) -> Served:
        argv = [sys.executable, "-m", "tritonlab", "serve", "--port", "0", "--no-browser", *self.args]

        def setup() -> None:
            os.setsid()
            if self.preexec is not None:
                self.preexec()

        self.proc = subprocess.Popen(
            argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=setup
        )
        lines: queue.Queue[str] = queue.Queue()

        def pump() -> None:
            for line in self.proc.stdout:  # type: ignore[union-attr]
                self.output.append(line)
                lines.put(line)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    pytest.fail("the server exited: " + "".join(self.output)[-3000:])
                continue
            found = re.search(r"(http://127\.0\.0\.1:\d+)/(?:\?token=([\w-]+)|login)", line)
            if found:
                self.base, self.token = found.group(1), found.group(2) or ""
                return self
        pytest.fail("the server printed no URL: " + "".join(self.output)[-3000:])

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss(self) -> int:
        """The server process's resident set, in bytes (VmRSS)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)  # a clean stop: runs end, the sandbox's mounts are released
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever outlived it
        except ProcessLookupError:
            pass
        self.proc.wait()
