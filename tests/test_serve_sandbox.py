"""`tritonlab serve` on a non-loopback address needs the hardened layer AND per-run cgroups (issue 17)."""

from __future__ import annotations

import pytest

from tritonlab.cli import serve as cli_serve
from tritonlab.runs.cgroups import proof

WITH = {"per_run_cgroups": True, "active": ["memory", "pids"], "reason": "a probe exceeded each"}
WITHOUT = {"per_run_cgroups": False, "active": [], "reason": "cannot create run cgroups: Permission denied"}


def test_shared_server_refused_without_run_cgroups(capsys: pytest.CaptureFixture[str]) -> None:
    assert not cli_serve.check_sandbox("0.0.0.0", True, "verified", False, WITHOUT)
    err = capsys.readouterr().err
    assert "per-run cgroups" in err and "Refusing" in err and "Permission denied" in err


def test_shared_server_refused_without_either(capsys: pytest.CaptureFixture[str]) -> None:
    assert not cli_serve.check_sandbox("10.0.0.5", False, "no bwrap", False, WITHOUT)
    err = capsys.readouterr().err
    assert "hardened sandbox" in err and "per-run cgroups" in err


def test_shared_server_starts_with_both_or_when_allowed() -> None:
    assert cli_serve.check_sandbox("0.0.0.0", True, "verified", False, WITH)
    assert cli_serve.check_sandbox("0.0.0.0", True, "verified", True, WITHOUT)
    assert cli_serve.check_sandbox("0.0.0.0", False, "no bwrap", True, WITHOUT)


def test_loopback_only_warns(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_serve.check_sandbox("127.0.0.1", True, "verified", False, WITHOUT)
    assert "NOT in per-run cgroups" in capsys.readouterr().err


def test_switched_off_cgroups_are_reported_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITONLAB_RUN_CGROUPS", "off")
    proof.probe.cache_clear()
    try:
        report = proof.report()
    finally:
        proof.probe.cache_clear()
    assert report["per_run_cgroups"] is False and report["active"] == []
    assert "TRITONLAB_RUN_CGROUPS=off" in report["reason"]
    assert not cli_serve.check_sandbox("0.0.0.0", True, "verified", False, report)
