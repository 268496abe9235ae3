"""The hardened layer's decision: never claim a layer that was not verified."""

from __future__ import annotations

import pytest

from tritonlab.runs import hardening


def test_auto_mode_does_not_claim_hardening_for_gpu_runs_without_cuda_inside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`auto` on the GPU backend claims the hardened layer only when a CUDA kernel ran inside bubblewrap: where
    none can (no GPU here, or no bwrap), it falls back to layer 1 and says why."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: tests/adversarial/test_gpu_runs.py checks that auto IS hardened")
    monkeypatch.setenv("TRITONLAB_SANDBOX", "auto")
    report = hardening.probe("gpu")
    assert report["hardened"] is False and report["reason"]
    if hardening.find_bwrap():
        assert "CUDA inside the sandbox" in report["reason"], report["reason"]
    assert hardening.decide("gpu") == (False, report["reason"])


def test_a_changed_mode_is_honoured_in_the_same_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe is cached; the cache must not keep answering for a mode that is no longer asked for."""
    monkeypatch.setenv("TRITONLAB_SANDBOX", "auto")
    hardening.probe("interpreter")  # whatever this machine allows, now cached
    monkeypatch.setenv("TRITONLAB_SANDBOX", "basic")
    assert hardening.decide("interpreter")[0] is False
    assert "switched off" in hardening.probe("interpreter")["reason"]
