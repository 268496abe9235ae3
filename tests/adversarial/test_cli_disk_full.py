"""The CLI on a full disk (issue 17, round 3): no traceback, a clear "nothing was saved" with what to do, and
nothing changed or left behind (no empty database or marker that a later command would take for damage).
TRITONLAB_HOME and the workspace live on a real small tmpfs, filled up before each command (root only)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "tests" / "fixtures" / "course"
COMMANDS = (["check", "vector-copy"], ["hint", "vector-copy"], ["progress"], ["reset", "vector-copy"])


def fill(folder: Path) -> None:
    try:
        with open(folder / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
    except OSError:
        pass


def snapshot(top: Path) -> dict[str, str]:
    """Every file's hash, but for the filler and SQLite's own -wal/-shm companions (SQLite creates them at each
    open and removes them at the last clean close; never removed by hand while another process may use them)."""
    return {
        str(p.relative_to(top)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in top.rglob("*")
        if p.is_file() and p.name != "filler" and not p.name.endswith(("-wal", "-shm"))
    }


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    if os.geteuid() != 0:
        print("SKIP REASON: mounting a small tmpfs needs root")
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)], check=False).returncode:
        print("SKIP REASON: cannot mount a tmpfs here")
        pytest.skip("cannot mount a tmpfs here")
    env = dict(
        os.environ,
        TRITONLAB_HOME=str(mount / "home"),
        TRITONLAB_WORKSPACE=str(mount / "ws"),
        TRITONLAB_COURSE=str(COURSE),
        TRITONLAB_BACKEND="interpreter",
        TRITONLAB_SANDBOX="basic",
        TRITONLAB_LANG="en",
        PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    try:
        for setup in (["init", str(mount / "ws")], ["progress"]):  # a workspace and a real database first
            subprocess.run(
                [sys.executable, "-m", "tritonlab", *setup], env=env, cwd=mount, check=True, timeout=120
            )
        fill(mount)
        yield mount, env
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_cli_on_a_full_disk_says_nothing_was_saved(
    disk: tuple[Path, dict[str, str]], command: list[str]
) -> None:
    mount, env = disk
    before = snapshot(mount)
    done = subprocess.run(
        [sys.executable, "-m", "tritonlab", *command],
        env=env,
        cwd=mount / "ws",
        capture_output=True,
        text=True,
        timeout=180,
    )
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said
    assert done.returncode == 1, said
    assert "The disk is full" in done.stderr and "nothing was saved" in done.stderr, said
    assert "Free some space on the disk that holds" in done.stderr, said
    assert snapshot(mount) == before, "a command on a full disk changed or left files"
    assert not [p.name for p in (mount / "home" / "runs").iterdir()], "a run folder was left behind"
