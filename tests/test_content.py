"""The real course: every lesson loads, every code block and example runs on the interpreter, every stated
number is computed, every outcome is mapped. (Starters fail / solutions pass: `tritonlab dev check`.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tritonlab.content.course import load_course

ROOT = Path(__file__).resolve().parent.parent
COURSE = load_course(ROOT / "course")
LESSONS = {lesson.id: lesson for lesson in COURSE.lessons}
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
PRELUDE = 'import torch\nDEVICE = "cuda" if torch.cuda.is_available() else "cpu"\n__name__ = \'__lesson__\'\n'
RUNNER = r"""
import sys, json, traceback
blocks = json.loads(sys.stdin.read())
ns = {}
exec(compile(blocks[0]["code"], "<prelude>", "exec"), ns)
for i, block in enumerate(blocks[1:], 1):
    try:
        exec(compile(block["code"], f"<block {i}>", "exec"), ns)
    except BaseException as exc:
        if block["raises"] and type(exc).__name__ == block["raises"]:
            continue
        traceback.print_exc()
        print(f"BLOCK {i} FAILED", file=sys.stderr)
        sys.exit(1)
    else:
        if block["raises"]:
            print(f"BLOCK {i} should raise {block['raises']}", file=sys.stderr)
            sys.exit(1)
print("ALL BLOCKS OK")
"""


def interpreter_env() -> dict[str, str]:
    return dict(os.environ, TRITON_INTERPRET="1", MPLBACKEND="Agg")


def test_lessons_are_numbered_by_their_folders_in_reading_order() -> None:
    assert len(COURSE.lessons) >= 13
    numbers = [lesson.number for lesson in COURSE.lessons]
    assert numbers == sorted(set(numbers)) and numbers[0] == 1
    assert numbers == [int(lesson.id.split("-")[0]) for lesson in COURSE.lessons]


COUNT_WORDS = {
    "en": ["Twelve", "Thirteen", "Fourteen", "Fifteen", "Sixteen"],
    "pt": ["Doze", "Treze", "Catorze", "Quinze", "Dezesseis"],
    "es": ["Doce", "Trece", "Catorce", "Quince", "Dieciséis"],
}


def test_the_welcome_text_counts_the_lessons() -> None:
    """The welcome text names the number of lessons in words, in every language: adding a lesson (or merging
    two branches that each added one) must update it."""
    for lang, words in COUNT_WORDS.items():
        word = words[len(COURSE.lessons) - 12]
        assert COURSE.welcome[lang].startswith(word + " "), (lang, word, COURSE.welcome[lang][:40])


@pytest.mark.parametrize("lesson_id", list(LESSONS))
def test_lesson_code_blocks_run(lesson_id: str) -> None:
    import json

    lesson = LESSONS[lesson_id]
    text = (lesson.dir / "lesson.en.md").read_text(encoding="utf-8")
    blocks = [{"code": PRELUDE, "raises": None}]
    for info, code in FENCE.findall(text):
        words = info.split()
        if "norun" in words:
            continue
        raises = next((w.split("=", 1)[1] for w in words if w.startswith("raises=")), None)
        blocks.append({"code": code, "raises": raises})
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(blocks),
        capture_output=True,
        text=True,
        cwd=lesson.dir,
        env=interpreter_env(),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ALL BLOCKS OK" in proc.stdout


EXAMPLES = [(lesson.id, ex.file) for lesson in COURSE.lessons for ex in lesson.examples]


@pytest.mark.parametrize("lesson_id,file", EXAMPLES, ids=[f"{a}/{b.name}" for a, b in EXAMPLES])
def test_example_runs(lesson_id: str, file: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(file)],
        capture_output=True,
        text=True,
        cwd=file.parent.parent,
        env=interpreter_env(),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_every_lesson_has_examples() -> None:
    assert all(lesson.examples for lesson in COURSE.lessons)


@pytest.mark.parametrize("lesson_id", list(LESSONS))
def test_stated_numbers_are_computed(lesson_id: str) -> None:
    import math

    os.environ.setdefault("TRITON_INTERPRET", "1")
    import triton

    lesson = LESSONS[lesson_id]
    text = (lesson.dir / "lesson.en.md").read_text(encoding="utf-8")
    for number in lesson.numbers:
        assert number.quote in text, f"{lesson_id}: quote {number.quote!r} is not in the lesson text"
        value = eval(number.code, {"math": math, "triton": triton})  # noqa: S307 - course data, reviewed
        if number.digits is not None:
            value = round(value, number.digits)
            if number.digits == 0:
                value = int(value)
        assert str(value) == number.value, f"{lesson_id}: {number.code} = {value}, text says {number.value}"


@pytest.mark.parametrize("lesson_id", list(LESSONS))
def test_sections_and_figures_exist(lesson_id: str) -> None:
    lesson = LESSONS[lesson_id]
    text = (lesson.dir / "lesson.en.md").read_text(encoding="utf-8")
    headings = {h.strip() for h in re.findall(r"^##\s+(.+)$", text, re.M)}
    for outcome in lesson.outcomes:
        assert outcome.section in headings, f"{lesson_id}: outcome {outcome.id} names missing section"
    for figure in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (lesson.dir / figure).is_file(), f"{lesson_id}: figure {figure} is missing"


def test_every_declared_outcome_is_taught_and_checked() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import outcomes

    rows = outcomes.mapping()
    ids = {r["id"] for r in rows}
    expected = {o.id for lesson in COURSE.lessons for o in lesson.outcomes}
    assert {f"{n}.{k}" for n in range(1, 13) for k in range(1, 4)} <= expected  # lessons 1-12: three each
    assert ids == expected, f"missing: {sorted(expected - ids)}, unexpected: {sorted(ids - expected)}"
    unchecked = [r["id"] for r in rows if not r["exercises"] and not r["quiz"]]
    assert not unchecked, f"outcomes with no exercise and no quiz question: {unchecked}"
    assert (ROOT / "docs" / "outcomes.md").read_text() == outcomes.render(), "run python scripts/outcomes.py"


def test_cli_docs_are_current() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_cli_docs.py"), "--check"])
    assert proc.returncode == 0, "docs/cli.md is stale: run python scripts/gen_cli_docs.py"
