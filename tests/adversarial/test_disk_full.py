"""A full disk (issue 17): a save answers 507 "nothing was saved" and leaves no temporary file, a hint answers
507 JSON (not a 500 with a SQLite I/O error), a check ends with a clear error event (never a reset
connection). The data folder and the workspace live on a small tmpfs that the test fills up (root only)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tritonlab.service import Service
from tritonlab.web import create_app
from tritonlab.web.security import cookie_name

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "tests" / "fixtures" / "course"
TOKEN = "disk-full-token-0123456789abcdef"
BASE = "http://127.0.0.1:8000"
ORIGIN = {"Origin": BASE}


def fill(folder: Path) -> None:
    """Write until the file system refuses: from now on every new block fails with ENOSPC."""
    try:
        with open(folder / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:
        pass


@pytest.fixture
def full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        monkeypatch.setenv("TRITONLAB_HOME", str(disk / "home"))
        monkeypatch.setenv("TRITONLAB_BACKEND", "interpreter")
        monkeypatch.setenv("TRITONLAB_SANDBOX", "basic")  # the zygote itself is not what this tests
        service = Service(course_dir=COURSE, workspace_dir=disk / "ws", lang="en")
        exercise = service.exercise("vector-copy")
        service.learner_file(exercise)
        with TestClient(create_app(service, TOKEN), base_url=BASE) as client:
            cookie = client.get(f"/?token={TOKEN}", follow_redirects=False).cookies[cookie_name(TOKEN)]
            client.cookies.set(cookie_name(TOKEN), cookie)
            text, version = service.read_code(exercise)
            fill(disk)
            yield {"client": client, "service": service, "ws": disk / "ws", "text": text, "version": version}
        service.close()
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_save_on_a_full_disk(full: dict) -> None:
    client = full["client"]
    new = full["text"] + "\n# an edit that cannot be stored\n" + "x = 1\n" * 2000
    response = client.put(
        "/api/exercises/vector-copy/code", json={"text": new, "base_version": full["version"]}, headers=ORIGIN
    )
    assert response.status_code == 507, response.text
    assert "nothing was saved" in response.json()["error"]
    assert not [p.name for p in full["ws"].rglob("*.tmp")], "a temporary file was left in the workspace"
    assert full["service"].read_code(full["service"].exercise("vector-copy"))[0] == full["text"]


def test_hint_on_a_full_disk(full: dict) -> None:
    response = full["client"].post("/api/exercises/vector-copy/hint", headers=ORIGIN)
    assert response.status_code == 507, response.text
    assert "disk is full" in response.json()["error"]


def test_check_on_a_full_disk(full: dict) -> None:
    client = full["client"]
    response = client.post("/api/exercises/vector-copy/check", headers=ORIGIN)
    assert response.status_code == 200, response.text
    events = []
    with client.stream("GET", response.json()["events"], timeout=120) as stream:
        name = None
        for line in stream.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name:
                events.append((name, json.loads(line[6:])))
    assert events and events[-1][0] == "end", events
    errors = [data["message"] for name, data in events if name == "error"]
    assert errors and "disk is full" in errors[0], events
    saved = client.post(
        "/api/exercises/vector-copy/check", json={"text": full["text"] + "\n# edit\n"}, headers=ORIGIN
    )
    assert saved.status_code == 507 and "nothing was saved" in saved.json()["error"]
