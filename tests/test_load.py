"""A light version of scripts/load_test.py: 10 learners against a real server process, then kill -9."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from load_test import run_load  # noqa: E402


@pytest.mark.slow
def test_learners_under_load_lose_nothing() -> None:
    result = run_load(learners=10, budget_s=25)
    assert result["server_errors"] == 0, result
    assert not result["client_errors"], result
    assert result["no_lost_edit"], result["edit_chain"]
    assert result["jobs_finished"] == 10, result
    # 10 learners stay below the 16-run cap, so none is turned away; the queue serves them in arrival order
    assert result["queue_full_429"] == 0, result
    assert result["order_inversions"] == 0, result
    assert result["attempts_after_kill9"] >= result["attempts_acked"] and result["integrity_ok"], result
    assert result["rss_after_mb"] - result["rss_before_mb"] < 150, result
