"""Service.warm_up on a GPU: the GPU probe and the first worker's start (with the sandbox's probe) overlap."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tritonlab.runs import backend as backends
from tritonlab.service import Service

PROBE_S = 0.8  # what each of the two takes here (seconds on a real GPU machine: a subprocess, a sandbox)


class Worker:
    dead = False

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def slow_pieces(monkeypatch: pytest.MonkeyPatch, gpu: bool) -> Worker:
    worker = Worker()

    def start(self: Service, backend: str) -> Worker:  # as _local_zygote: made once, then kept
        if backend not in self._zygotes:
            time.sleep(PROBE_S)
            self._zygotes[backend] = worker
        return self._zygotes[backend]

    def choose(requested: str | None = None) -> backends.Choice:
        time.sleep(PROBE_S)
        if not gpu:
            raise backends.BackendError("no usable GPU here")
        return backends.Choice("gpu", "probed")

    monkeypatch.setattr(Service, "_local_zygote", start)
    monkeypatch.setattr(backends, "choose", choose)
    return worker


def test_the_gpu_probe_runs_while_the_first_worker_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """On the H200 the first check after install waited for the sandbox's probe, then for the GPU's."""
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path))
    slow_pieces(monkeypatch, gpu=True)
    service = Service(workspace_dir=tmp_path / "ws", backend="gpu")
    began = time.monotonic()
    service.warm_up()
    elapsed = time.monotonic() - began
    assert service.backend == "gpu"
    assert elapsed < 1.7 * PROBE_S, f"the two probes ran one after the other ({elapsed:.2f} s)"


def test_no_gpu_closes_the_worker_started_for_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path))
    worker = slow_pieces(monkeypatch, gpu=False)
    service = Service(workspace_dir=tmp_path / "ws", backend="gpu")
    with pytest.raises(backends.BackendError, match="no usable GPU"):
        service.warm_up()
    assert worker.closed and "gpu" not in service._zygotes
