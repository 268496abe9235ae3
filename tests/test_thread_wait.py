"""Idle CPU thread pools sleep instead of spinning (config.py `thread_wait_env`): in the CLI's own process,
set before numpy or torch loads, and in every run's environment; the host's own settings and
TRITONLAB_THREAD_WAIT=spin win. The CPU it saves is measured by benchmarks/thread_wait.py, not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tritonlab import config
from tritonlab.runs.limits import child_environment

KEYS = tuple(config.THREAD_WAIT_DEFAULTS)

# The CLI's entry point, then what this process holds: the variables, and whether numpy was loaded before
# them (a library reads them once, when it loads).
PROBE = """
import json, os, sys
from tritonlab.cli import app
seen = {}
real = app.config.quiet_thread_pools
def probe():
    seen["numpy_before"] = "numpy" in sys.modules or "torch" in sys.modules
    real()
app.config.quiet_thread_pools = probe
sys.argv = ["tritonlab", "--version"]
try:
    app.main()
except SystemExit:
    pass
print(json.dumps({"env": {k: os.environ.get(k) for k in KEYS}, **seen}))
""".replace("KEYS", repr(KEYS))


def cli_process(env: dict[str, str]) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in (*KEYS, "TRITONLAB_THREAD_WAIT")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**base, **env}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_cli_makes_its_thread_pools_sleep_before_numpy_loads() -> None:
    seen = cli_process({})
    assert seen["env"] == config.THREAD_WAIT_DEFAULTS
    assert seen["numpy_before"] is False


def test_the_hosts_own_setting_and_spin_are_kept() -> None:
    assert cli_process({"OMP_WAIT_POLICY": "ACTIVE"})["env"] == {
        "OMP_WAIT_POLICY": "ACTIVE", "OPENBLAS_THREAD_TIMEOUT": "4"
    }  # fmt: skip
    assert cli_process({"TRITONLAB_THREAD_WAIT": "spin"})["env"] == dict.fromkeys(KEYS)


@pytest.mark.parametrize("backend", ["interpreter", "GPU"])
def test_every_run_gets_them(backend: str, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # noqa: ANN001
    backend = backend.lower()  # an id without the marker's name: this test needs no GPU
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path))
    for key in (*KEYS, "TRITONLAB_THREAD_WAIT"):
        monkeypatch.delenv(key, raising=False)
    env = child_environment(backend)
    assert {k: env[k] for k in KEYS} == config.THREAD_WAIT_DEFAULTS
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "28")  # a host's own choice passes through
    assert child_environment(backend)["OPENBLAS_THREAD_TIMEOUT"] == "28"
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT")
    monkeypatch.setenv("TRITONLAB_THREAD_WAIT", "spin")
    assert not set(KEYS) & set(child_environment(backend))


def test_gpu_runs_get_one_cuda_work_queue(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # noqa: ANN001
    """A GPU run's CUDA context gets one hardware work queue (config.cuda_context_env: the driver makes contexts
    one at a time, and fewer queues make each cheaper); a host's own CUDA_DEVICE_MAX_CONNECTIONS, a count in
    TRITONLAB_CUDA_CONNECTIONS or `driver` win; an interpreter run is left alone."""
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path))
    for key in ("CUDA_DEVICE_MAX_CONNECTIONS", "TRITONLAB_CUDA_CONNECTIONS"):
        monkeypatch.delenv(key, raising=False)
    assert child_environment("gpu")["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in child_environment("interpreter")
    monkeypatch.setenv("TRITONLAB_CUDA_CONNECTIONS", "4")
    assert child_environment("gpu")["CUDA_DEVICE_MAX_CONNECTIONS"] == "4"
    for odd in ("0", "33", "many"):  # not a count from 1 to 32: the default
        monkeypatch.setenv("TRITONLAB_CUDA_CONNECTIONS", odd)
        assert child_environment("gpu")["CUDA_DEVICE_MAX_CONNECTIONS"] == "1", odd
    monkeypatch.setenv("TRITONLAB_CUDA_CONNECTIONS", "driver")
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in child_environment("gpu")
    monkeypatch.delenv("TRITONLAB_CUDA_CONNECTIONS")
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8")  # the host's own value passes through
    assert child_environment("gpu")["CUDA_DEVICE_MAX_CONNECTIONS"] == "8"
