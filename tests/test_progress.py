"""The progress store: schema, queries, and durability of acknowledged writes under a real SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tritonlab.store.progress import MIGRATIONS, Store

WRITER = r"""
import sys
from tritonlab.store.progress import Store
store = Store(sys.argv[1])
for i in range(30):
    rid = store.record_attempt({"exercise": f"ex-{i}", "passed": i % 2 == 0, "backend": "interpreter"})
    print(rid, flush=True)  # acknowledged: the commit returned
"""


def test_schema_and_queries(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.sqlite3")
    assert store.schema_version == len(MIGRATIONS)
    store.record_attempt({"exercise": "a", "passed": False, "backend": "interpreter", "seed": 4})
    store.record_attempt({"exercise": "a", "passed": True, "backend": "gpu"})
    store.record_hint("a", 0)
    store.record_hint("a", 0)
    store.record_quiz_result("01", 0.5, False)
    store.record_quiz_result("01", 0.9, True)
    assert store.passed_exercises() == {"a"}
    assert [a["passed"] for a in store.attempts("a")] == [False, True]
    assert store.hints_shown("a") == 1
    assert store.best_quiz()["01"] == {"score": 0.9, "passed": True, "tries": 2}
    with sqlite3.connect(tmp_path / "p.sqlite3") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.sqlite3"
    Store(path)
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version={len(MIGRATIONS) + 1}")
    try:
        Store(path)
    except RuntimeError as exc:
        assert "newer tritonlab" in str(exc)
    else:
        raise AssertionError("a database from a newer version must not be opened")


def test_acknowledged_attempts_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "p.sqlite3"
    for kill_after in (3, 11, 24):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
        acked = []
        assert proc.stdout is not None
        while len(acked) < kill_after:
            line = proc.stdout.readline()
            if not line:
                break
            acked.append(int(line))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        store = Store(path)
        stored = {a["id"] for a in store.attempts()}
        assert set(acked) <= stored, f"acknowledged ids lost: {set(acked) - stored}"
        assert store.integrity_ok()
        time.sleep(0.05)


def test_a_fresh_services_store_is_made_once_by_concurrent_callers(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """Two checks finishing at once on a fresh server both reached `Service.store` first: each made a Store,
    and the second's migration failed ("table attempts already exists"; an empty file taken for a damaged one
    and set aside) — the check's stream ended with an error event (found by tests/test_run_output_memory.py)."""
    import threading

    from tritonlab.service import Service

    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    for round_ in range(5):
        service = Service(workspace_dir=tmp_path / f"ws{round_}")
        service._store = None
        (tmp_path / "home" / "progress.db").unlink(missing_ok=True)
        barrier, got, errors = threading.Barrier(6), [], []

        def reach(
            service: Service = service,
            barrier: threading.Barrier = barrier,
            got: list = got,
            errors: list = errors,
        ) -> None:
            barrier.wait()
            try:
                got.append(service.store)
            except Exception as exc:  # noqa: BLE001 - the test reports it
                errors.append(repr(exc))

        threads = [threading.Thread(target=reach) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len({id(store) for store in got}) == 1
        assert not list((tmp_path / "home").glob("progress.db.damaged-*"))
        service.close()
