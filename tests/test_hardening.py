"""The hardened layer's decision: never claim a layer that was not verified."""

from __future__ import annotations

import pytest

from tritonlab.runs import hardening


def test_auto_mode_does_not_claim_hardening_for_gpu_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA inside bubblewrap is unverified: `auto` must fall back to layer 1 on the GPU backend, and say so."""
    monkeypatch.setenv("TRITONLAB_SANDBOX", "auto")
    report = hardening.probe("gpu")
    assert report["hardened"] is False and "CUDA inside bubblewrap" in report["reason"]
    assert hardening.decide("gpu") == (False, report["reason"])


def test_a_changed_mode_is_honoured_in_the_same_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe is cached; the cache must not keep answering for a mode that is no longer asked for."""
    monkeypatch.setenv("TRITONLAB_SANDBOX", "auto")
    hardening.probe("interpreter")  # whatever this machine allows, now cached
    monkeypatch.setenv("TRITONLAB_SANDBOX", "basic")
    assert hardening.decide("interpreter")[0] is False
    assert "switched off" in hardening.probe("interpreter")["reason"]
