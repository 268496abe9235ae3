"""Hints that wait for failed checks (exercise.toml `hint_after_failures`): validated when the course loads, and
held back by every path that hands out hints — the service (CLI `hint`, `watch`), the web API and the notebook's
`%hint` — until the learner's failed checks of the exercise reach the number, or the exercise is passed.

Each test copies the fixture course and gates its exercise's second hint behind two failed checks; failed and
passed checks are written into the real progress store the way a check writes them (`record_attempt`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURE_COURSE, cli

from tritonlab.content.course import CourseError, load_course
from tritonlab.models import HintLocked
from tritonlab.service import Service, take_hint
from tritonlab.store.progress import Store

EXERCISE_TOML = "01-only/exercises/vector-copy/exercise.toml"


def gated_course(tmp_path: Path, gates: str = "[0, 2]") -> Path:
    """The fixture course with `hint_after_failures = <gates>` in its one exercise."""
    course = tmp_path / "course"
    shutil.copytree(FIXTURE_COURSE, course)
    toml = course / EXERCISE_TOML
    text = toml.read_text()
    toml.write_text(
        text.replace('outcomes = ["1.1"]\n', f'outcomes = ["1.1"]\nhint_after_failures = {gates}\n')
    )
    return course


def words(text: str) -> str:
    return " ".join(text.split())  # the console wraps long lines


def fail(store: Store, times: int, passed: bool = False) -> None:
    for _ in range(times):
        store.record_attempt({"exercise": "vector-copy", "backend": "interpreter", "passed": passed})


@pytest.mark.parametrize(
    "gates, problem",
    [
        ("[0]", "has 1 number(s) for 2 hints"),
        ("[0, 2, 3]", "has 3 number(s) for 2 hints"),
        ("[2, 0]", "may not decrease"),
        ("[0, -1]", "from 0 to 100"),
        ("[0, 1000]", "from 0 to 100"),
        ('[0, "2"]', "whole numbers"),
        ("[0, 2.5]", "whole numbers"),
        ("[true, 2]", "whole numbers"),
        ("2", "whole numbers"),
    ],
)
def test_bad_gates_are_refused_at_load_naming_the_file_and_field(
    tmp_path: Path, gates: str, problem: str
) -> None:
    course = gated_course(tmp_path, gates)
    with pytest.raises(CourseError) as err:
        load_course(course)
    assert err.value.field == "hint_after_failures" and err.value.path == course / EXERCISE_TOML
    assert problem in str(err.value)


def test_gates_load_and_the_real_course_gates_the_rmsnorm_formula() -> None:
    root = Path(__file__).resolve().parent.parent
    course = load_course(root / "course")
    ex = next(e for lesson in course.lessons for e in lesson.exercises if e.id == "rmsnorm-backward")
    assert ex.hint_after_failures == (0, 0, 2) and ex.hint_gate(2) == 2 and ex.hint_gate(0) == 0
    assert "rstd³" in ex.hints["en"][2]  # the formula is the gated hint, and only it
    assert not any("rstd³" in h for lang in ("en", "pt", "es") for h in ex.hints[lang][:2])
    plain = next(e for lesson in course.lessons for e in lesson.exercises if e.id == "vector-add")
    assert plain.hint_after_failures == () and plain.hint_gate(5) == 0


def test_take_hint_waits_for_failed_checks_and_records_nothing_meanwhile(home: Path, tmp_path: Path) -> None:
    course = load_course(gated_course(tmp_path))
    ex = course.lessons[0].exercises[0]
    store = Store()
    assert take_hint(store, ex, "en")[:2] == (1, 2)
    locked = take_hint(store, ex, "en")
    assert locked == HintLocked(number=2, total=2, needed=2, failed=0)
    assert store.hints_shown("vector-copy") == 1  # a locked hint is not counted as shown
    fail(store, 1)
    assert take_hint(store, ex, "en") == HintLocked(number=2, total=2, needed=2, failed=1)
    fail(store, 1)
    number, total, text = take_hint(store, ex, "en")
    assert (number, total) == (2, 2) and text == ex.hints["en"][1]
    assert take_hint(store, ex, "en") is None and store.hints_shown("vector-copy") == 2


def test_a_pass_opens_every_gate(home: Path, tmp_path: Path) -> None:
    ex = load_course(gated_course(tmp_path, "[0, 50]")).lessons[0].exercises[0]
    store = Store()
    take_hint(store, ex, "en")
    assert isinstance(take_hint(store, ex, "en"), HintLocked)
    fail(store, 1, passed=True)
    assert take_hint(store, ex, "en")[0] == 2


def test_cli_hint_and_watch_say_how_many_failed_checks_are_needed(home: Path, tmp_path: Path) -> None:
    course = gated_course(tmp_path)
    env = {"TRITONLAB_COURSE": str(course)}
    ws = tmp_path / "ws"
    cli("init", str(ws), env=env)
    assert "Hint 1/2" in cli("hint", "vector-copy", cwd=ws, env=env).stdout
    locked = cli("hint", "vector-copy", cwd=ws, env=env)
    out = words(locked.stdout)
    assert (
        locked.returncode == 0
        and "Hint 2/2 for vector-copy opens after 2 failed checks" in out
        and "(so far: 0)" in out
    )
    assert "Mask both" not in locked.stdout  # the second hint's text
    data = json.loads(cli("hint", "vector-copy", "--json", cwd=ws, env=env).stdout)
    assert data == {
        "exercise": "vector-copy",
        "hint": None,
        "locked": {"number": 2, "needed": 2, "failed": 0},
    }
    watched = cli("watch", cwd=ws, input="h\nq\n", env=env)
    assert (
        "Hint 2/2 opens after 2 failed checks" in words(watched.stdout) and "Mask both" not in watched.stdout
    )
    fail(Service(course_dir=course, workspace_dir=ws).store, 2)
    opened = cli("hint", "vector-copy", cwd=ws, env=env)
    assert "Hint 2/2" in opened.stdout and "Mask both" in opened.stdout


def test_web_api_sends_no_text_until_the_hint_opens(home: Path, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from tritonlab.web.app import create_app
    from tritonlab.web.security import cookie_name

    token = "t" * 32
    service = Service(course_dir=gated_course(tmp_path), workspace_dir=tmp_path / "ws", lang="en")
    origin = {"Origin": "http://127.0.0.1:8000"}
    try:
        with TestClient(create_app(service, token), base_url="http://127.0.0.1:8000") as client:
            client.cookies.set(
                cookie_name(token),
                client.get(f"/?token={token}", follow_redirects=False).cookies[cookie_name(token)],
            )
            first = client.post("/api/exercises/vector-copy/hint", headers=origin).json()
            assert first["number"] == 1 and first["text"]
            locked = client.post("/api/exercises/vector-copy/hint", headers=origin).json()
            assert locked == {
                "number": None,
                "total": 2,
                "text": None,
                "done": False,
                "locked": {"number": 2, "needed": 2, "failed": 0},
            }
            fail(service.store, 2)
            opened = client.post("/api/exercises/vector-copy/hint", headers=origin).json()
            assert opened["number"] == 2 and "Mask both" in opened["text"] and opened["done"] is True
    finally:
        service.close()


def test_notebook_hint_magic_shows_the_gate(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tritonlab.notebook import magics, session

    monkeypatch.setenv("TRITONLAB_COURSE", str(gated_course(tmp_path)))
    shown: list[str] = []
    monkeypatch.setattr(magics, "show_html", shown.append)
    session._SESSION = None
    try:
        magics.hint_line("vector-copy")
        magics.hint_line("vector-copy")
        assert "Hint 1/2" in shown[0] and "Hint 2/2 for vector-copy opens after 2 failed checks" in shown[1]
        assert "Mask both" not in shown[1]
        fail(session.get_session().service.store, 2)
        magics.hint_line("vector-copy")
        assert "Mask both" in shown[2]
    finally:
        session.get_session().close()
        session._SESSION = None
