"""The hardened layer's decision: never claim a layer that was not verified."""

from __future__ import annotations

import pytest

from tritonlab import hardening


def test_auto_mode_does_not_claim_hardening_for_gpu_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA inside bubblewrap is unverified: `auto` must fall back to layer 1 on the GPU backend, and say so."""
    monkeypatch.setenv("TRITONLAB_SANDBOX", "auto")
    report = hardening.probe("gpu")
    assert report["hardened"] is False and "CUDA inside bubblewrap" in report["reason"]
    assert hardening.decide("gpu") == (False, report["reason"])


def test_basic_mode_is_never_hardened(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITONLAB_SANDBOX", "basic")
    assert hardening.decide("interpreter")[0] is False
