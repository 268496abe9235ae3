"""Choosing the backend (runs/backend.py): the GPU probe's answer is kept per install."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_a_usable_gpu_is_probed_once_per_install(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU probe (a subprocess importing torch and creating a CUDA context: seconds) answers once; a
    service or daemon starting again reads the answer while its key holds; a changed key or `fresh` probes.
    Here the probe subprocess runs a stand-in script that says "usable GPU" and counts its runs."""
    from tritonlab.runs import backend

    runs = tmp_path / "runs.txt"
    monkeypatch.setattr(backend, "nvidia_present", lambda: True)
    monkeypatch.setattr(
        backend,
        "PROBE",
        f"open({str(runs)!r}, 'a').write('x'); import json; "
        "print(json.dumps({'cuda': True, 'name': 'stand-in', 'triton_backend': 'cuda 90'}))",
    )
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")

    def probe(fresh: bool = False) -> dict:
        backend.probe_gpu.cache_clear()  # each call as a new process would make it
        return backend.probe_gpu(fresh)

    assert probe()["name"] == "stand-in" and runs.read_text() == "x"
    assert probe()["name"] == "stand-in" and runs.read_text() == "x"  # from gpu-probe.json
    assert backend.choose("gpu").backend == "gpu" and runs.read_text() == "x"
    probe(fresh=True)  # doctor
    assert runs.read_text() == "xx"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # another device: another answer
    probe()
    assert runs.read_text() == "xxx"
    backend.probe_gpu.cache_clear()
