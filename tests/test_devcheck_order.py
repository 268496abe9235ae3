"""dev check's order: the longest items first, by the last run's times or, without one, a guess from the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tritonlab.cli import devcheck

ROOT = Path(__file__).resolve().parent.parent


def test_a_kernel_with_a_dot_or_an_autotuner_is_guessed_long(tmp_path: Path) -> None:
    plain = tmp_path / "plain.py"
    plain.write_text("import triton.language as tl\nx = tl.load(p)\n")
    dot = tmp_path / "dot.py"
    dot.write_text("acc = tl.dot(a, b, acc)\n")
    tuned = tmp_path / "tuned.py"
    tuned.write_text("@triton.autotune(configs=[], key=['n'])\n")
    assert devcheck.guess_seconds("solution", dot) > devcheck.guess_seconds("solution", plain)
    assert devcheck.guess_seconds("starter", tuned) > devcheck.guess_seconds("solution", plain)
    assert devcheck.guess_seconds("solution", plain) > devcheck.guess_seconds("starter", plain)
    assert devcheck.guess_seconds("starter", tmp_path / "missing.py") == devcheck.GUESS_S["starter"]


def test_the_course_heavy_checks_are_guessed_first() -> None:
    """On the real course: matmul-bias, autotune and attention solutions come before every 1-D exercise."""
    from tritonlab.content.course import load_course

    course = load_course()
    estimates = {
        f"{ex.id} {kind}": devcheck.guess_seconds(kind, path)
        for ex in course.exercises()
        for kind, path in (("solution", ex.solution), ("starter", ex.starter))
    }
    order = devcheck.longest_first(estimates)
    for heavy in ("matmul-bias solution", "autotune solution", "attention-forward solution"):
        for light in ("vector-copy solution", "softmax solution", "row-reduce starter"):
            assert order.index(heavy) < order.index(light), (heavy, light, order)


def test_longest_first_keeps_the_given_order_on_ties() -> None:
    assert devcheck.longest_first({"a": 1.0, "b": 5.0, "c": 1.0, "d": 7.5}) == ["d", "b", "a", "c"]


def test_times_are_kept_per_backend_and_merged(home: Path) -> None:
    devcheck.record_times(
        "gpu", [{"item": "a solution", "seconds": 3.5}, {"item": "b starter", "seconds": 1.0}]
    )
    devcheck.record_times("interpreter", [{"item": "a solution", "seconds": 9.0}])
    devcheck.record_times("gpu", [{"item": "b starter", "seconds": 2.0}])  # a run with --only
    assert devcheck.recorded_times("gpu") == {"a solution": 3.5, "b starter": 2.0}
    assert devcheck.recorded_times("interpreter") == {"a solution": 9.0}


@pytest.mark.parametrize(
    "content", [b"{not json", b"[1, 2]", b'{"gpu": [1]}', b'{"gpu": {"a": "slow", "b": 2}}', b"\x00\xff"]
)
def test_a_damaged_times_file_means_no_times_and_is_replaced(home: Path, content: bytes) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / devcheck.TIMES_FILE).write_bytes(content)
    assert devcheck.recorded_times("gpu") in ({}, {"b": 2.0})
    devcheck.record_times("gpu", [{"item": "x solution", "seconds": 1.25}])
    assert json.loads((home / devcheck.TIMES_FILE).read_text())["gpu"]["x solution"] == 1.25


def test_only_with_an_unknown_exercise_id_is_an_error_not_an_empty_pass(home: Path) -> None:
    """`dev check --only vector-cpy` (a typo) once checked nothing and exited 0."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "tritonlab", "dev", "check", "--only", "vector-cpy"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0, done.stdout
    assert "vector-cpy" in done.stdout + done.stderr and "vector-copy" in done.stdout + done.stderr


def test_only_takes_a_comma_separated_list(home: Path) -> None:
    """`--only a,b` names two exercises (it was once read as one unknown id `a,b`); an unknown one among them is
    still named."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "tritonlab", "dev", "check", "--json", "--only", "vector-copy,vector-cpy"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(done.stdout)
    assert done.returncode != 0 and any(
        "no exercise of the course: vector-cpy " in p for p in report["problems"]
    )
    done = subprocess.run(
        [sys.executable, "-m", "tritonlab", "dev", "check", "--json", "--only", "vector-copy, pid-map"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(done.stdout)
    assert done.returncode == 0, report["problems"]
    assert {i["item"] for i in report["items"]} == {
        "vector-copy solution", "vector-copy starter", "pid-map solution", "pid-map starter",
    }  # fmt: skip


def test_more_than_sixteen_checks_at_once_is_refused() -> None:
    """`--jobs` stops at 16 (the per-exercise compile caches let 16 run at once without filling a shared one),
    so a larger value is a usage error before anything runs, not a red dev check."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "tritonlab", "dev", "check", "--jobs", "17", "--only", "vector-copy"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--jobs" in done.stdout + done.stderr and "Traceback" not in done.stderr


def test_each_exercise_checks_in_a_compile_cache_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dev check gives each exercise's starter and solution a compile cache of their own (16 checks at once
    filled the one shared learner cache on an H100: ENOSPC). Seen through what the check keeps per cache on a
    compile target (the replay's variants, grading/check/precompile.py): under the exercise's cache, none
    under the one user's."""
    from rich.console import Console

    from tritonlab.grading.check import pipeline
    from tritonlab.grading.check.precompile import VariantStore
    from tritonlab.runs import caches

    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path))
    monkeypatch.setenv("TRITONLAB_PREDICT", "0")  # nothing compiled ahead: the variants are only kept
    monkeypatch.setattr(pipeline.CheckRun, "precompile_target", "cuda:90")
    problems = devcheck.run_dev_check(
        Console(file=open(os.devnull, "w")), only=["vector-copy"], backend="interpreter", jobs=2
    )
    assert problems == []
    assert VariantStore().load(caches.learner_name("dev-vector-copy"), "vector-copy")
    assert VariantStore().load(caches.LEARNER, "vector-copy") == []
