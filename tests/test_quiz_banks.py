"""The real quiz banks: all there, valid, and with answers that cannot go stale.

Numeric answers are recomputed from `answer_code`; code questions are run on the Triton interpreter in a
subprocess and must print exactly the keyed option.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tritonlab.content import quiz

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "course"
LESSONS = tomllib.loads((COURSE / "course.toml").read_text(encoding="utf-8"))["lessons"]
BANKS = {lesson: COURSE / lesson / "quiz.en.toml" for lesson in LESSONS}


def raw_questions(kind: str) -> list[tuple[str, str]]:
    """(lesson, question id) of every question of a type, read at collection time without validation."""
    found = []
    for lesson, path in BANKS.items():
        if path.is_file():
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            found += [(lesson, q.get("id", "?")) for q in data.get("questions", []) if q.get("type") == kind]
    return found


def bank(lesson: str) -> quiz.Bank:
    return quiz.load_bank(BANKS[lesson])


def test_thirteen_banks_with_enough_questions() -> None:
    assert len(LESSONS) == 13
    missing = [str(p) for p in BANKS.values() if not p.is_file()]
    assert not missing, f"missing quiz banks: {missing}"
    counts = {lesson: len(bank(lesson).questions) for lesson in LESSONS}
    short = {lesson: n for lesson, n in counts.items() if n < 8}
    assert not short, f"banks with fewer than 8 questions: {short}"
    assert sum(counts.values()) >= 80


@pytest.mark.parametrize("lesson", LESSONS)
def test_bank_validates(lesson: str) -> None:
    assert quiz.validate_bank(BANKS[lesson]) == []


@pytest.mark.parametrize("lesson", LESSONS)
def test_bank_mixes_types_and_covers_the_lessons_outcomes(lesson: str) -> None:
    number = int(lesson[:2])
    questions = bank(lesson).questions
    assert {q.type for q in questions} == set(quiz.TYPES), "use every question type in every lesson"
    outcomes = {o for q in questions for o in q.outcomes}
    lesson_toml = tomllib.loads((COURSE / lesson / "lesson.toml").read_text(encoding="utf-8"))
    expected = {o["id"] for o in lesson_toml["outcomes"]}  # N.1 to N.3, or more (lesson 13 has four)
    assert expected and all(o.split(".")[0] == str(number) for o in expected)
    assert outcomes <= expected, f"outcome ids outside lesson {number}: {sorted(outcomes - expected)}"
    assert outcomes == expected, f"outcomes no question checks: {sorted(expected - outcomes)}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_option_is_explained_in_its_own_words(lesson: str) -> None:
    for q in bank(lesson).questions:
        if q.is_choice:
            assert len(set(q.explanations)) == len(q.explanations), (
                f"{q.id}: two options share an explanation"
            )
            assert all(len(e) >= 15 for e in q.explanations), (
                f"{q.id}: an explanation is too short to explain"
            )
        else:
            assert len(q.explanation) >= 30, f"{q.id}: the numeric explanation should show the working"


_EVALUATE = """
import json, math, sys, tomllib
import triton

values = {}
for path in sys.argv[1:]:
    for q in tomllib.loads(open(path, encoding="utf-8").read()).get("questions", []):
        if q.get("type") == "numeric":
            try:
                values[f"{path}::{q['id']}"] = eval(q["answer_code"], {"math": math, "triton": triton})
            except Exception as exc:
                values[f"{path}::{q['id']}"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(values))
"""


@pytest.fixture(scope="module")
def computed() -> dict[str, object]:
    """Every numeric answer_code, evaluated in a fresh interpreter-mode process with math and triton."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    paths = [str(p) for p in BANKS.values() if p.is_file()]
    done = subprocess.run(
        [sys.executable, "-c", _EVALUATE, *paths],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize(("lesson", "qid"), raw_questions("numeric"))
def test_numeric_answer_matches_its_code(lesson: str, qid: str, computed: dict[str, object]) -> None:
    q = bank(lesson).question(qid)
    value = computed[f"{BANKS[lesson]}::{qid}"]
    assert isinstance(value, int | float), f"{lesson}/{qid}: answer_code failed: {value}"
    if q.digits is not None:
        value = round(value, q.digits)
    assert math.isclose(value, q.answer, rel_tol=1e-9, abs_tol=1e-12), (
        f"{BANKS[lesson]}: question {qid!r} stores answer {q.answer!r} but answer_code gives {value!r}"
    )


def test_engine_agrees_on_computed_answers() -> None:
    problems = [p for lesson in LESSONS for p in quiz.computed_answer_problems(bank(lesson))]
    assert problems == []


def _run_code(job: tuple[str, str], tmp: Path) -> tuple[str, str, int]:
    lesson, qid = job
    q = bank(lesson).question(qid)
    script = tmp / f"{lesson}--{qid}.py"
    script.write_text(q.code, encoding="utf-8")  # a file: @triton.jit needs the source to inspect
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONWARNINGS": "ignore"}
    try:
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=240, env=env, cwd=tmp
        )
    except subprocess.TimeoutExpired:
        return "", "timed out after 240 s", -1
    return done.stdout, done.stderr, done.returncode


@pytest.fixture(scope="module")
def code_outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[str, str, int]]:
    """Run every code question once, a few at a time (each pays for importing torch and triton)."""
    jobs = raw_questions("code")
    tmp = tmp_path_factory.mktemp("code-questions")
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        results = list(pool.map(lambda job: _run_code(job, tmp), jobs))
    return dict(zip(jobs, results, strict=True))


@pytest.mark.parametrize(("lesson", "qid"), raw_questions("code"))
def test_code_question_prints_its_keyed_option(
    lesson: str, qid: str, code_outputs: dict[tuple[str, str], tuple[str, str, int]]
) -> None:
    q = bank(lesson).question(qid)
    stdout, stderr, code = code_outputs[(lesson, qid)]
    assert code == 0, f"{lesson}/{qid} exited with {code}:\n{stderr[-2000:]}"
    lines = stdout.strip().splitlines()
    assert len(lines) == 1, f"{lesson}/{qid} should print one line, printed {lines!r}"
    assert lines[0].strip() == q.options[q.answer], (
        f"{BANKS[lesson]}: question {qid!r} keys option {q.answer} ({q.options[q.answer]!r}) "
        f"but the program prints {lines[0].strip()!r}"
    )


# ---- lesson 1 covers the five ideas of the seed page --------------------------------------------------

SEED_IDEAS = {
    "ninja-gap": ["gap", "hand-tuned"],
    "tile-vs-thread": ["thread", "block"],
    "compiler-manages": ["coalesc", "shared memory", "SM"],
    "constexpr-meaning": ["compile", "constexpr"],
    "why-researchers": ["Python", "CUDA"],
}


@pytest.mark.parametrize("qid", sorted(SEED_IDEAS))
def test_lesson_1_covers_the_seed_ideas(qid: str) -> None:
    q = bank("01-why-triton").question(qid)
    text = " ".join([q.prompt, *q.options, *q.explanations])
    for word in SEED_IDEAS[qid]:
        assert word in text, f"{qid} should talk about {word!r}"


def test_compiler_question_keeps_grid_decomposition_with_the_programmer() -> None:
    q = bank("01-why-triton").question("compiler-manages")
    keyed = {q.options[i] for i in q.keyed}
    assert not any("launch grid" in text for text in keyed), "choosing the grid stays the programmer's job"


# ---- the documented example is itself a valid bank ----------------------------------------------------


def test_authoring_example_bank_is_valid(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "authoring.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Quizzes") :]
    example = re.search(r"```toml\n(.*?)```", section, re.S)
    assert example, "docs/authoring.md's quiz section should show an example bank"
    path = tmp_path / "quiz.en.toml"
    path.write_text(example.group(1), encoding="utf-8")
    assert quiz.validate_bank(path) == []
    example_bank = quiz.load_bank(path)
    assert quiz.computed_answer_problems(example_bank) == []
    for q in example_bank.questions:
        if q.type == "code":
            script = tmp_path / f"{q.id}.py"
            script.write_text(q.code, encoding="utf-8")
            env = {**os.environ, "TRITON_INTERPRET": "1"}
            done = subprocess.run(
                [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240
            )
            assert done.stdout.strip() == q.options[q.answer], done.stderr


def test_dev_check_helper_catches_stale_answers(tmp_path: Path) -> None:
    from tritonlab.cli.quiz import bank_answer_problems

    text = """
[[questions]]
id = "prints"
type = "code"
outcomes = ["1.1"]
prompt = "What does it print?"
code = "print(6 * 7)"
options = ["42", "67"]
answer = ANSWER
explanations = ["six sevens", "concatenation"]

[[questions]]
id = "count"
type = "numeric"
outcomes = ["1.1"]
prompt = "cdiv?"
answer = 97
answer_code = "triton.cdiv(98432, 1024)"
explanation = "ceiling division"
"""
    path = tmp_path / "quiz.en.toml"
    path.write_text(text.replace("ANSWER", "0"), encoding="utf-8")
    assert bank_answer_problems(path) == []
    path.write_text(text.replace("ANSWER", "1").replace("answer = 97", "answer = 98"), encoding="utf-8")
    problems = bank_answer_problems(path)
    assert any("'prints'" in p and "prints '42'" in p for p in problems), problems
    assert any("'count'" in p and "98" in p for p in problems), problems
    path.write_text(text.replace("ANSWER", "5"), encoding="utf-8")
    assert "out of range" in bank_answer_problems(path)[0]
