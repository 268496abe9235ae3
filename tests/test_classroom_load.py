"""The 30-second smoke version of the classroom load and fault run (scripts/load_test.py --smoke), once per
database: 20 learners against a real `serve --classroom` process, kill -9 and restart mid-load, kill -9 at
the end; nothing acknowledged may be missing and no request may get a 5xx. The full 3-minute, 200-learner
run and its figures: docs/reliability.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_classroom_smoke_load_loses_nothing(classroom_url: str, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    args = [sys.executable, str(ROOT / "scripts" / "load_test.py"), "--smoke", "--json-out", str(out)]
    if classroom_url.startswith("postgresql"):
        args += ["--db", "postgresql", "--database-url", classroom_url]  # the test session's server
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert out.exists(), done.stderr[-3000:]
    r = json.loads(out.read_text())
    assert r["database"] == ("postgresql" if classroom_url.startswith("postgresql") else "sqlite")
    assert r["server_errors"] == 0, r["errors"]
    assert r["lost_acked_saves"] == 0 and r["lost_acked_attempts"] == 0, r["durability_problems"]
    assert not r["durability_problems"] and not r["errors"], r
    assert r["integrity_ok"]
    # the run did real work on both sides of the kill
    assert r["logins"] >= 20 and r["acked_saves"] > r["acked_saves_before_kill"] > 0, r
    assert r["checks_with_verdict"] > 0 and r["timeline"]["restart_s"] > 0, r
    assert r["page_requests"] > 0 and r["queue_wait_p95_ms"] is not None, r
    assert done.returncode == 0, done.stdout[-2000:]
