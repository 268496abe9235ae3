"""`tritonlab quiz` through the real entry point (`python -m tritonlab`), with real stdin and a private store.

Most tests use a one-lesson course built in tmp_path, so the answers are known; one runs on the real course.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tritonlab.content import quiz

ROOT = Path(__file__).resolve().parent.parent

BANK = textwrap.dedent(
    '''
    pass_mark = 0.75

    [[questions]]
    id = "grid"
    type = "single"
    outcomes = ["3.1"]
    prompt = "How is the grid sized?"
    options = ["n // BLOCK", "cdiv(n, BLOCK)", "n", "BLOCK"]
    answer = 1
    explanations = ["drops the tail", "covers every element", "one program per element", "a single block"]

    [[questions]]
    id = "safe"
    type = "multiple"
    outcomes = ["3.2"]
    prompt = "Which accesses are safe?"
    options = ["masked load", "masked store", "unmasked load past n", "mask offs <= n"]
    answer = [0, 1]
    explanations = ["safe load", "safe store", "reads past the end", "off by one"]

    [[questions]]
    id = "programs"
    type = "numeric"
    outcomes = ["3.1"]
    prompt = "cdiv(98432, 1024)?"
    answer = 97
    answer_code = "triton.cdiv(98432, 1024)"
    explanation = "ceiling division gives 97"

    [[questions]]
    id = "prints"
    type = "code"
    outcomes = ["3.3"]
    prompt = "What does it print?"
    code = """
    print(6 * 7)
    """
    options = ["42", "67", "13"]
    answer = 0
    explanations = ["six sevens", "that is concatenation", "that is addition"]
    '''
)
RIGHT = {"grid": 1, "safe": frozenset({0, 1}), "programs": 97, "prints": 0}


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A one-lesson course (lesson 3) and a private TRITONLAB_HOME, for this process and its children."""
    root = tmp_path / "course"
    lesson = root / "03-grids"
    lesson.mkdir(parents=True)
    (root / "course.toml").write_text('format_version = 1\nlessons = ["03-grids"]\n[title]\nen = "t"\n')
    (lesson / "lesson.toml").write_text('[title]\nen = "Grids"\n')
    (lesson / "lesson.en.md").write_text("# Grids\n")
    (lesson / "quiz.en.toml").write_text(BANK)
    monkeypatch.setenv("TRITONLAB_COURSE", str(root))
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRITONLAB_LANG", raising=False)
    return root


def tritonlab(*args: str, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["COLUMNS"] = "200"  # keep rich from wrapping the lines the tests look for
    return subprocess.run(
        [sys.executable, "-m", "tritonlab", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def shown(course: Path, seed: int) -> tuple[quiz.Bank, quiz.Presentation]:
    bank = quiz.load_bank(course / "03-grids" / "quiz.en.toml")
    return bank, quiz.shuffled(bank, seed)


def choice(course: Path, seed: int, qid: str, answer: object) -> str:
    """What a learner types to give `answer` (bank indices) under the seed's option order."""
    bank, pres = shown(course, seed)
    q = bank.question(qid)
    if q.type == "numeric":
        return str(answer)
    indices = sorted(answer) if isinstance(answer, frozenset) else [answer]
    return ",".join(str(pres.to_position(q, i) + 1) for i in indices)


def db_rows(course: Path, table: str) -> list[tuple]:
    path = course.parent / "home" / "progress.sqlite3"
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        if table == "quiz_answers":
            return db.execute(
                "SELECT lesson, question, answer, score FROM quiz_answers ORDER BY id"
            ).fetchall()
        return db.execute("SELECT lesson, score, passed FROM quiz_results ORDER BY id").fetchall()


def keys_anywhere(data: object) -> set[str]:
    if isinstance(data, dict):
        return set(data) | {k for v in data.values() for k in keys_anywhere(v)}
    if isinstance(data, list):
        return {k for v in data for k in keys_anywhere(v)}
    return set()


# ---- --json listing ----------------------------------------------------------------------------------


def test_json_lists_questions_without_answers(course: Path) -> None:
    done = tritonlab("quiz", "3", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["lesson"] == "03-grids" and data["seed"] == 0 and data["pass_mark"] == 0.75
    assert [q["id"] for q in data["questions"]] == ["grid", "safe", "programs", "prints"]
    assert not keys_anywhere(data) & {
        "answer",
        "explanations",
        "explanation",
        "answer_code",
        "right",
        "correct",
    }
    assert "97" not in json.dumps(data["questions"][2])
    bank, pres = shown(course, 0)
    for q, listed in zip(bank.questions, data["questions"], strict=True):
        if q.is_choice:
            assert [o["text"] for o in listed["options"]] == [text for _, text in pres.shown(q)]
    assert data["questions"][3]["code"].strip() == "print(6 * 7)"
    assert db_rows(course, "quiz_results") == [], "listing a quiz records nothing"


def test_json_listing_follows_the_seed(course: Path) -> None:
    orders = set()
    for seed in ("1", "2", "3", "4"):
        data = json.loads(tritonlab("quiz", "03-grids", "--json", "--seed", seed).stdout)
        orders.add(tuple(o["text"] for q in data["questions"] if "options" in q for o in q["options"]))
    assert len(orders) > 1
    again = json.loads(tritonlab("quiz", "grids", "--json", "--seed", "4").stdout)
    assert again["seed"] == 4


def test_quiz_command_imports_neither_torch_nor_triton(course: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tritonlab", "quiz", "3", "-a", "programs=97", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert not {m for m in imported if m.split(".")[0] in ("torch", "triton")}


# ---- --answer grading --------------------------------------------------------------------------------


def test_answers_graded_and_saved(course: Path) -> None:
    args = [f"--answer={qid}={choice(course, 0, qid, a)}" for qid, a in RIGHT.items()]
    done = tritonlab("quiz", "3", *args, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["passed"] is True and data["score"] == 1.0 and data["answered"] == data["total"] == 4
    grid = next(q for q in data["questions"] if q["id"] == "grid")
    assert grid["correct"] and grid["feedback"][0]["explanation"] == "covers every element"
    assert db_rows(course, "quiz_results") == [("03-grids", 1.0, 1)]
    answers = db_rows(course, "quiz_answers")
    assert [(q, a, s) for _, q, a, s in answers] == [("grid", "1", 1.0), ("safe", "0,1", 1.0),
                                                     ("programs", "97", 1.0), ("prints", "0", 1.0)]  # fmt: skip

    from tritonlab.store.progress import Store

    assert Store().best_quiz()["03-grids"] == {"score": 1.0, "passed": True, "tries": 1}


def test_partial_answers_fail_with_exit_1_and_partial_credit(course: Path) -> None:
    safe_half = choice(course, 0, "safe", frozenset({0}))
    done = tritonlab("quiz", "3", "-a", f"safe={safe_half}", "-a", "programs=96", "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["passed"] is False
    assert data["score"] == pytest.approx(0.5 / 4, abs=1e-4)
    by_id = {q["id"]: q for q in data["questions"]}
    assert by_id["safe"]["score"] == 0.5 and not by_id["safe"]["correct"]
    assert by_id["programs"]["answer"] == 97
    assert db_rows(course, "quiz_results") == [("03-grids", pytest.approx(0.125), 0)]


def test_answers_without_json_print_a_readable_report(course: Path) -> None:
    done = tritonlab("quiz", "3", "-a", f"grid={choice(course, 0, 'grid', 0)}")
    assert done.returncode == 1
    assert "drops the tail" in done.stdout and "covers every element" in done.stdout
    assert "Score: 0%" in done.stdout


def test_letters_are_accepted(course: Path) -> None:
    position = int(choice(course, 5, "grid", 1))
    letter = "abcd"[position - 1]
    done = tritonlab("quiz", "3", "--seed", "5", "--answer", f"grid={letter}", "--json")
    assert json.loads(done.stdout)["questions"][0]["correct"] is True


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["quiz", "42"], "unknown lesson '42'"),
        (["quiz", "3", "--answer", "nope=1"], "unknown question 'nope'"),
        (["quiz", "3", "--answer", "grid=9"], "choice 9 is out of range"),
        (["quiz", "3", "--answer", "grid=1,2"], "takes one choice"),
        (["quiz", "3", "--answer", "grid"], "malformed; write QID=CHOICE"),
        (["quiz", "3", "--answer", "grid="], "malformed"),
        (["quiz", "3", "--answer", "programs=lots"], "not a number"),
        (["quiz", "3", "-a", "grid=1", "-a", "grid=2"], "answered twice"),
    ],
)
def test_bad_input_is_a_one_line_error_with_exit_2(course: Path, args: list[str], words: str) -> None:
    done = tritonlab(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert words in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("error:")
    assert db_rows(course, "quiz_results") == []


def test_broken_bank_is_reported_not_crashed(course: Path) -> None:
    bank = course / "03-grids" / "quiz.en.toml"
    bank.write_text(BANK.replace("answer = 1\n", "answer = 7\n"))
    done = tritonlab("quiz", "3", "--json")
    assert done.returncode == 2
    assert "question 'grid', field `answer`" in done.stderr and "Traceback" not in done.stderr
    bank.unlink()
    done = tritonlab("quiz", "3")
    assert done.returncode == 2 and "has no quiz yet" in done.stderr


# ---- interactive, on real stdin ----------------------------------------------------------------------


def typed(course: Path, seed: int, answers: dict[str, object]) -> str:
    return "".join(choice(course, seed, qid, a) + "\n" for qid, a in answers.items())


def test_interactive_all_right(course: Path) -> None:
    done = tritonlab("quiz", "3", "--seed", "9", input=typed(course, 9, RIGHT))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for number in range(1, 5):
        assert f"Question {number}/4" in out
    assert out.count("Right.") == 4
    assert "covers every element" in out and "ceiling division gives 97" in out
    assert "Score: 100%" in out and "passed" in out
    assert db_rows(course, "quiz_results") == [("03-grids", 1.0, 1)]
    assert len(db_rows(course, "quiz_answers")) == 4


def test_interactive_shows_options_in_seed_order_and_explains_mistakes(course: Path) -> None:
    bank, pres = shown(course, 2)
    wrong = {"grid": 0, "safe": frozenset({0}), "programs": 98, "prints": 2}
    done = tritonlab("quiz", "3", "--seed", "2", input=typed(course, 2, wrong))
    assert done.returncode == 1
    out = done.stdout
    for k, (_, text) in enumerate(pres.shown(bank.question("grid"))):
        assert f"{'abcd'[k]}) {text}" in out
    assert "drops the tail" in out and "covers every element" in out  # the pick and the key, both explained
    assert "Partly right: 50%" in out and "safe load" in out and "right, not picked: safe store" in out
    assert "the answer is 97" in out
    assert "Score: 12%" in out and "not passed yet" in out and "tritonlab quiz 3" in out
    assert db_rows(course, "quiz_results") == [("03-grids", 0.125, 0)]


def test_interactive_invalid_answers_are_asked_again(course: Path) -> None:
    answers = "7\nhello\n1,2\n" + typed(course, 0, RIGHT)
    done = tritonlab("quiz", "3", "--seed", "0", input=answers)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("try again") == 3
    assert "choice 7 is out of range" in done.stdout and "takes one choice" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_interactive_eof_keeps_answers_given_so_far(course: Path) -> None:
    two = {"grid": RIGHT["grid"], "safe": RIGHT["safe"]}
    done = tritonlab("quiz", "3", "--seed", "0", input=typed(course, 0, two))
    assert done.returncode == 1
    assert "Stopped after 2 of 4 questions" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert [row[1] for row in db_rows(course, "quiz_answers")] == ["grid", "safe"]
    assert db_rows(course, "quiz_results") == [], "an unfinished attempt records no result"


def test_interactive_q_quits(course: Path) -> None:
    done = tritonlab("quiz", "3", "--seed", "0", input=typed(course, 0, {"grid": 1}) + "q\n")
    assert done.returncode == 1 and "Stopped after 1 of 4 questions" in done.stdout
    assert len(db_rows(course, "quiz_answers")) == 1


def test_interactive_ctrl_c_ends_cleanly(course: Path) -> None:
    env = dict(
        os.environ,
        COLUMNS="200",
        PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tritonlab", "quiz", "3", "--seed", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # Ctrl-C as a terminal delivers it: a test run started in the background (`make test &`) inherits
        # SIGINT ignored, and Python then installs no KeyboardInterrupt handler in the child.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(typed(course, 0, {"grid": 1}))
    proc.stdin.flush()
    seen = ""
    deadline = time.monotonic() + 60
    while "Question 2/4" not in seen and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
    assert "Question 2/4" in seen
    time.sleep(0.5)  # let it block on input()
    proc.send_signal(signal.SIGINT)
    # Wait with stdin still open: communicate() would close it, and a loaded machine may deliver that EOF to
    # input() before the signal (the quiz then ends as for Ctrl-D, exit 1).
    proc.wait(timeout=60)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, seen + out + err
    assert "Traceback" not in out + err
    assert "Stopped after 1 of 4 questions" in out
    assert len(db_rows(course, "quiz_answers")) == 1


# ---- the real course ---------------------------------------------------------------------------------


def test_real_course_quiz_lists_and_grades(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITONLAB_COURSE", raising=False)
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    started = time.monotonic()
    done = tritonlab("quiz", "5", "--json")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 30
    data = json.loads(done.stdout)
    assert data["lesson"] == "05-vector-add" and len(data["questions"]) >= 8
    bank = quiz.load_bank(ROOT / "course" / "05-vector-add" / "quiz.en.toml")
    pres = quiz.shuffled(bank, 0)
    args = []
    for q in bank.questions:
        if q.type == "numeric":
            args.append(f"--answer={q.id}={q.answer}")
        else:
            picks = sorted(pres.to_position(q, i) + 1 for i in q.keyed)
            args.append(f"--answer={q.id}={','.join(map(str, picks))}")
    graded = tritonlab("quiz", "05-vector-add", *args, "--json")
    assert graded.returncode == 0, graded.stderr
    assert json.loads(graded.stdout)["score"] == 1.0
