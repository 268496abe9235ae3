"""The 30-second smoke version of the classroom load and fault run (scripts/load_test.py --smoke --hostile),
once per database: 20 learners against a real `serve --classroom` process, kill -9 and restart mid-load,
kill -9 at the end, and the hostile mix's smoke size (scripts/load_hostile.py: two log-in flooders, a join
flooder, 200 half-open sockets) before the kill; nothing acknowledged may be missing, no learner's request
may get a 5xx, the flood's neither (a 503 of a full hashing queue aside), a wrong join code is a 404, the
right one makes no more accounts than the join rate limit allows, and the probe's pages while the mix ran
stay within 1 s at p95. The full 3-minute, 200-learner run and its figures: docs/reliability.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tritonlab.web.classroom.login import JOINS_PER_MINUTE

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from load_hostile import SMOKE as mix  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_classroom_smoke_load_loses_nothing(classroom_url: str, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    args = [
        sys.executable,
        str(ROOT / "scripts" / "load_test.py"),
        "--smoke",
        "--hostile",
        "--json-out",
        str(out),
    ]
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
    # the hostile mix ran, was refused the way it should be, and left the probe's pages fast
    h = r["hostile"]
    assert h["login_status"].get("401", 0) > 0 and h["half_open_opened"] >= 200, h
    # a wrong code is a 404; the right one makes accounts, at most JOINS_PER_MINUTE from one address a minute
    assert h["join_status"].get("200", 0) > 0 and h["join_status"].get("404", 0) > 0, h
    assert h["join_status"].get("200", 0) <= JOINS_PER_MINUTE * mix.join and h["seconds"] < 60, h
    for code in [*h["login_status"], *h["join_status"]]:
        assert code == "503" or not code.startswith("5"), h
    assert h["probe_pages_during"] > 0 and h["probe_p95_during_ms"] <= 1000, h
    assert done.returncode == 0, done.stdout[-2000:]
