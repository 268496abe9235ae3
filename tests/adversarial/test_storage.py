"""Damaged progress databases (issue 17): a 0-byte, truncated or garbage file is moved aside with a message
and a fresh one started, never silently reset and never a raw traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tritonlab.store.progress import Store


def _filled(path: Path) -> bytes:
    store = Store(path)
    for i in range(60):
        store.record_attempt({"exercise": f"e{i}", "passed": True, "backend": "interpreter", "x": "y" * 2000})
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path.read_bytes()


def _damaged(kind: str, path: Path) -> bytes:
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(b"not a database, just some bytes\n" * 300)
    else:  # truncated in the middle of its pages
        data = _filled(path)
        path.write_bytes(data[: len(data) // 3])
    return path.read_bytes()


@pytest.mark.parametrize("kind", ["empty", "garbage", "truncated"])
def test_damaged_database_is_set_aside_with_a_message(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "progress.db"
    before = _damaged(kind, path)
    capsys.readouterr()
    store = Store(path)
    err = capsys.readouterr().err
    assert store.damaged and store.set_aside is not None
    assert store.set_aside.read_bytes() == before, "the damaged file is kept as it was"
    assert "moved aside" in err and str(store.set_aside) in err
    assert store.attempts() == [] and store.integrity_ok()
    store.record_attempt({"exercise": "a", "passed": True, "backend": "interpreter"})
    assert Store(path).damaged is None and len(Store(path).attempts()) == 1


def test_healthy_database_is_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "progress.db"
    _filled(path)
    store = Store(path)
    assert store.damaged is None and store.set_aside is None
    assert len(store.attempts()) == 60
    assert list(tmp_path.glob("*.damaged-*")) == []


def test_run_folders_of_a_dead_server_are_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server killed with -9 leaves its run folders; the next start removes those whose owner is gone,
    and keeps those of a live process (a CLI and a server share the runs folder)."""
    import os
    import subprocess
    import time

    from tritonlab.runs import runfolder, sandbox

    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    dead = subprocess.Popen(["true"])
    dead.wait()
    runs = sandbox.config.runs_dir()
    gone = runs / f"run-{dead.pid}-abc"
    (gone / "sub").mkdir(parents=True)
    (gone / "sub" / "big.npy").write_bytes(b"x" * 1000)
    (gone / "link").symlink_to(tmp_path)  # never followed
    live = runs / f"run-{os.getppid()}-def"
    live.mkdir()
    mine = runfolder.new_run_dir()
    old = runs / "run-legacy1"
    old.mkdir()
    os.utime(old, (time.time() - 2 * 86400,) * 2)
    recent = runs / "run-legacy2"
    recent.mkdir()
    removed = runfolder.sweep_stale_runs()
    assert sorted(removed) == sorted([gone.name, old.name])
    assert not gone.exists() and not old.exists() and tmp_path.is_dir()
    assert live.is_dir() and mine.is_dir() and recent.is_dir()
    assert mine.name.startswith(f"run-{os.getpid()}-")
