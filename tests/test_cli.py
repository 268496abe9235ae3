"""Every CLI command, through the real entry point (`python -m tritonlab`), on the fixture course."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import LEARNERS, cli


def test_help_lists_every_command(fixture_course: Path) -> None:
    result = cli("--help")
    assert result.returncode == 0
    for command in (
        "list",
        "show",
        "init",
        "run",
        "check",
        "hint",
        "watch",
        "progress",
        "reset",
        "doctor",
        "dev",
    ):
        assert command in result.stdout


def test_list_and_show(fixture_course: Path) -> None:
    listed = cli("list", "--json")
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert data["exercises_total"] == 1 and data["current_exercise"] == "vector-copy"
    shown = cli("show", "1")
    assert (
        shown.returncode == 0 and "Copying" in shown.stdout and "tritonlab check vector-copy" in shown.stdout
    )
    missing = cli("show", "42")
    assert missing.returncode == 2 and "no lesson '42'" in missing.stderr


def test_init_check_fail_then_pass_then_progress(fixture_course: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert cli("init", str(ws)).returncode == 0
    learner = ws / "01-only" / "vector-copy.py"
    assert "TODO" in learner.read_text()

    first = cli("check", "vector-copy", cwd=ws)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "unwritten-output" in first.stdout and "never written" in first.stdout
    assert "interpreter" in first.stderr  # every run says which backend ran

    learner.write_text((LEARNERS / "good.py").read_text())
    second = cli("check", "vector-copy", "--json", cwd=ws)
    verdict = json.loads(second.stdout)
    assert second.returncode == 0 and verdict["passed"] and verdict["backend"] == "interpreter"
    assert set(verdict) >= {"exercise", "passed", "backend", "seed", "cases", "failures"}

    progress = json.loads(cli("progress", "--json", cwd=ws).stdout)
    assert progress["exercises_passed"] == 1 and progress["attempts"] == 2


def test_init_never_overwrites_edits(fixture_course: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    cli("init", str(ws))
    learner = ws / "01-only" / "vector-copy.py"
    learner.write_text("# my work\n")
    assert cli("init", str(ws)).returncode == 0
    assert learner.read_text() == "# my work\n"


def test_check_file_seed_replay_and_errors(fixture_course: Path) -> None:
    a = json.loads(
        cli("check", "vector-copy", "--file", str(LEARNERS / "floor_grid.py"), "--json", "--seed", "7").stdout
    )
    b = json.loads(
        cli("check", "vector-copy", "--file", str(LEARNERS / "floor_grid.py"), "--json", "--seed", "7").stdout
    )
    assert a["seed"] == b["seed"] == 7 and a["failures"] == b["failures"] and not a["passed"]
    assert any("cdiv" in f.get("cause", "") for f in a["failures"])
    unknown = cli("check", "no-such-exercise")
    assert (
        unknown.returncode == 2 and "no exercise called" in unknown.stderr and "vector-copy" in unknown.stderr
    )
    missing = cli("check", "vector-copy", "--file", "/nonexistent.py")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    forced = cli("check", "vector-copy", "--backend", "gpu")
    assert forced.returncode == 2 and "no usable GPU" in forced.stderr


def test_check_solution_passes(fixture_course: Path) -> None:
    result = cli("check", "vector-copy", "--solution")
    assert result.returncode == 0 and "passed" in result.stdout


def test_learner_errors_are_shown_learner_first(fixture_course: Path) -> None:
    syntax = cli("check", "vector-copy", "--file", str(LEARNERS / "syntax_error.py"))
    assert syntax.returncode == 1
    assert "syntax_error.py:3" in syntax.stdout and "SyntaxError" in syntax.stdout
    assert "Traceback" not in syntax.stdout + syntax.stderr
    exc = json.loads(cli("check", "vector-copy", "--file", str(LEARNERS / "exception.py"), "--json").stdout)
    failure = exc["failures"][0]
    assert failure["kind"] == "exception" and "AttributeError" in failure["message"]
    assert failure["where"].endswith("exception.py:2")


def test_hint_progressive_and_reset_backup(fixture_course: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    cli("init", str(ws))
    first = cli("hint", "vector-copy", cwd=ws)
    second = cli("hint", "vector-copy", cwd=ws)
    assert "Hint 1/2" in first.stdout and "Hint 2/2" in second.stdout
    assert "All 2 hints shown" in cli("hint", "vector-copy", cwd=ws).stdout
    learner = ws / "01-only" / "vector-copy.py"
    learner.write_text("# precious\n")
    reset = cli("reset", "vector-copy", cwd=ws)
    assert reset.returncode == 0 and "TODO" in learner.read_text()
    backups = list((ws / ".backups").iterdir())
    assert len(backups) == 1 and backups[0].read_text() == "# precious\n"


def test_run_prints_output_and_errors(fixture_course: Path, tmp_path: Path) -> None:
    program = tmp_path / "hello.py"
    program.write_text("import os\nprint('hello from', os.environ.get('TRITON_INTERPRET'))\n")
    ok = cli("run", str(program))
    assert ok.returncode == 0 and "hello from 1" in ok.stdout and "interpreter" in ok.stderr
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\nraise RuntimeError('boom')\n")
    failed = cli("run", str(bad))
    assert failed.returncode == 1 and "bad.py:2" in failed.stderr and "RuntimeError: boom" in failed.stderr


def test_doctor_reports_backend_and_sanity(fixture_course: Path) -> None:
    result = cli("doctor", "--json")
    report = json.loads(result.stdout)
    assert report["backend"]["chosen"] == "interpreter" and report["sanity"]["passed"]
    assert report["packages"]["torch"] and report["packages"]["triton"]
    assert isinstance(report["sandbox"]["hardened"], bool) and report["sandbox"]["layers"]
    assert result.returncode == 0


def test_watch_checks_then_quits(fixture_course: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    cli("init", str(ws))
    result = cli("watch", cwd=ws, input="h\nq\n")
    assert result.returncode == 0, result.stderr
    assert "vector-copy" in result.stdout and "not yet" in result.stdout and "Hint 1/2" in result.stdout


def test_dev_check_on_fixture_course(fixture_course: Path, home: Path) -> None:
    result = cli("dev", "check", "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["ok"], report["problems"]
    assert {i["item"] for i in report["items"]} >= {"vector-copy solution", "vector-copy starter"}
    # what each item took is kept for the next run's order (longest first)
    times = json.loads((home / "dev-check-times.json").read_text())["interpreter"]
    assert {"vector-copy solution", "vector-copy starter"} <= set(times)
    assert all(isinstance(v, float) and v > 0 for v in times.values())


@pytest.mark.parametrize("slow", ["vector-copy solution", "vector-copy starter"])
def test_dev_check_starts_the_item_its_last_run_found_longest(
    fixture_course: Path, home: Path, slow: str
) -> None:
    """One at a time (--jobs 1), the items finish in the order they start: the one recorded as slowest first."""
    home.mkdir(parents=True, exist_ok=True)
    fast = ({"vector-copy solution", "vector-copy starter"} - {slow}).pop()
    (home / "dev-check-times.json").write_text(json.dumps({"interpreter": {slow: 100.0, fast: 0.5}}))
    result = cli("dev", "check", "--json", "--jobs", "1")
    assert result.returncode == 0, result.stderr
    done = [json.loads(x)["done"] for x in result.stderr.splitlines() if x.startswith('{"done"')]
    assert done == [slow, fast], done


def test_dev_check_catches_a_passing_starter(home: Path, tmp_path: Path) -> None:
    from conftest import FIXTURE_COURSE

    course = tmp_path / "course"
    shutil.copytree(FIXTURE_COURSE, course)
    ex = course / "01-only" / "exercises" / "vector-copy"
    (ex / "starter.py").write_text((ex / "solution.py").read_text())
    result = cli("dev", "check", "--json", env={"TRITONLAB_COURSE": str(course)})
    report = json.loads(result.stdout)
    assert result.returncode == 1 and not report["ok"]
    assert any("starter should fail but passed" in p for p in report["problems"])


def test_broken_course_file_names_file_and_field(home: Path, tmp_path: Path) -> None:
    from conftest import FIXTURE_COURSE

    course = tmp_path / "course"
    shutil.copytree(FIXTURE_COURSE, course)
    (course / "01-only" / "exercises" / "vector-copy" / "exercise.toml").write_text('function = "3x"\n')
    result = cli("list", env={"TRITONLAB_COURSE": str(course)})
    assert result.returncode == 2
    assert (
        "exercise.toml" in result.stderr
        and "`function`" in result.stderr
        and "Traceback" not in result.stderr
    )


def test_run_survives_junk_left_in_the_run_dir(fixture_course: Path, tmp_path: Path) -> None:
    """A program may write anything into its run folder, including the file the parent reads back."""
    program = tmp_path / "junk.py"
    program.write_text("open('error.json', 'w').write('{not json')\nprint('done')\n")
    result = cli("run", str(program))
    assert result.returncode == 0 and "done" in result.stdout
    assert "Traceback" not in result.stderr
