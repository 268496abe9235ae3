"""A check or run grades exactly the text it was given, never a save that lands while it waits (issue 16).

The race: two web checks of different texts. Each request saves its text, then queues; before the fix the
child imported the workspace file when it finally ran, so the first check graded the second request's text.
Here the service's gate is held shut while both requests arrive, which makes the losing order certain.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tritonlab.service import Service
from tritonlab.web import create_app
from tritonlab.web.security import cookie_name

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "course"
EXERCISE = FIXTURE / "01-only" / "exercises" / "vector-copy"
TOKEN = "exact-text-token-0123456789"
BASE = "http://127.0.0.1:8000"
ORIGIN = {"Origin": BASE}
RIGHT = (EXERCISE / "solution.py").read_text()
WRONG = (EXERCISE / "starter.py").read_text()


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Service]:
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRITONLAB_BACKEND", "interpreter")
    s = Service(course_dir=FIXTURE, workspace_dir=tmp_path / "ws", backend="interpreter", lang="en")
    s.warm_up()
    yield s
    s.close()


def hold_gate(service: Service) -> None:
    for _ in range(service.gate().size):
        service.gate().acquire()


def open_gate(service: Service) -> None:
    for _ in range(service.gate().size):
        service.gate().release()


def test_service_check_grades_the_text_it_was_given(service: Service) -> None:
    exercise = service.exercise("vector-copy")
    verdicts: dict[str, object] = {}
    hold_gate(service)
    try:
        service.save_code(exercise, RIGHT, None, force=True)
        first = threading.Thread(
            target=lambda: verdicts.__setitem__("right", service.check(exercise, text=RIGHT))
        )
        first.start()
        service.save_code(exercise, WRONG, None, force=True)  # lands while the first check waits
        second = threading.Thread(
            target=lambda: verdicts.__setitem__("wrong", service.check(exercise, text=WRONG))
        )
        second.start()
    finally:
        open_gate(service)
    first.join(180)
    second.join(180)
    assert verdicts["right"].passed, verdicts["right"].to_json()
    assert not verdicts["wrong"].passed
    # messages name the learner's own file, not the run's snapshot of it
    file = str(service.learner_file(exercise))
    assert all("submitted" not in f.where for f in verdicts["wrong"].failures)
    assert all(f.where.startswith(file) for f in verdicts["wrong"].failures if f.where)


def test_a_check_without_text_grades_the_file_as_it_was_when_asked(service: Service) -> None:
    exercise = service.exercise("vector-copy")
    service.save_code(exercise, RIGHT, None, force=True)
    done: list = []
    hold_gate(service)
    try:
        worker = threading.Thread(target=lambda: done.append(service.check(exercise)))
        worker.start()
        while service.gate().waiting == 0:
            pass
        service.save_code(exercise, WRONG, None, force=True)
    finally:
        open_gate(service)
    worker.join(180)
    assert done[0].passed


def verdict_of(client: TestClient, job: dict) -> dict:
    name, verdict = None, None
    with client.stream("GET", job["events"], timeout=180) as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name == "verdict":
                verdict = json.loads(line[6:])
    assert verdict is not None
    return verdict


def test_two_web_checks_of_different_texts_each_grade_their_own(service: Service) -> None:
    app = create_app(service, TOKEN)
    with TestClient(app, base_url=BASE) as client:
        cookie = client.get(f"/?token={TOKEN}", follow_redirects=False).cookies[cookie_name(TOKEN)]
        client.cookies.set(cookie_name(TOKEN), cookie)
        url = "/api/exercises/vector-copy/check"
        hold_gate(service)
        try:
            base = client.get("/api/exercises/vector-copy/code").json()["version"]
            a = client.post(url, json={"text": RIGHT, "base_version": base}, headers=ORIGIN).json()
            base = client.get("/api/exercises/vector-copy/code").json()["version"]
            b = client.post(url, json={"text": WRONG, "base_version": base}, headers=ORIGIN).json()
        finally:
            open_gate(service)
        first, second = verdict_of(client, a), verdict_of(client, b)
    assert first["passed"], first
    assert not second["passed"], second
