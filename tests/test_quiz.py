"""The quiz engine on small banks built inline: validation, parsing, shuffling, grading, pass mark."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tritonlab.content import quiz
from tritonlab.content.quiz import QuizInputError

GOOD = textwrap.dedent(
    '''
    pass_mark = 0.75

    [[questions]]
    id = "one"
    type = "single"
    outcomes = ["3.1"]
    prompt = "Pick b."
    options = ["a", "b", "c", "d"]
    answer = 1
    explanations = ["not a", "yes b", "not c", "not d"]

    [[questions]]
    id = "many"
    type = "multiple"
    outcomes = ["3.1", "3.2"]
    prompt = "Pick a and c."
    options = ["a", "b", "c", "d", "e"]
    answer = [0, 2]
    explanations = ["yes a", "not b", "yes c", "not d", "not e"]
    explanation = "a closing note"

    [[questions]]
    id = "count"
    type = "numeric"
    outcomes = ["3.1"]
    prompt = "cdiv(98432, 1024)?"
    answer = 97
    answer_code = "triton.cdiv(98432, 1024)"
    explanation = "ceiling division"

    [[questions]]
    id = "ratio"
    type = "numeric"
    outcomes = ["3.1"]
    prompt = "1/12 to three decimals?"
    answer = 0.083
    answer_code = "1 / 12"
    digits = 3
    tolerance = 0.001
    explanation = "one flop per twelve bytes"

    [[questions]]
    id = "prints"
    type = "code"
    outcomes = ["3.2"]
    prompt = "What does it print?"
    code = """
    print(1 + 1)
    """
    options = ["1", "2", "11"]
    answer = 1
    explanations = ["no", "yes", "that is string concatenation"]
    '''
)


def write(tmp_path: Path, text: str, name: str = "quiz.en.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def bank(tmp_path: Path) -> quiz.Bank:
    return quiz.load_bank(write(tmp_path, GOOD))


# ---- loading and validation ------------------------------------------------------------------------


def test_good_bank_loads(bank: quiz.Bank) -> None:
    assert quiz.validate_bank(bank.path) == []
    assert bank.pass_mark == 0.75
    assert bank.ids == ("one", "many", "count", "ratio", "prints")
    assert bank.question("many").keyed == frozenset({0, 2})
    assert bank.question("one").keyed == frozenset({1})
    assert bank.question("ratio").digits == 3
    with pytest.raises(KeyError):
        bank.question("nope")


def test_pass_mark_defaults_to_80_percent(tmp_path: Path) -> None:
    text = GOOD.replace("pass_mark = 0.75\n", "")
    assert quiz.load_bank(write(tmp_path, text)).pass_mark == 0.8


def test_importing_the_engine_imports_neither_torch_nor_triton() -> None:
    import subprocess

    code = "import sys, tritonlab.content.quiz; print(sorted(m for m in ('torch', 'triton') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


BROKEN = {
    # name: (replace this, with this, expected field, expected words)
    "duplicate id": ('id = "many"', 'id = "one"', "id", "unique"),
    "bad id": ('id = "many"', 'id = "Many Things"', "id", "lower-case"),
    "unknown type": ('type = "multiple"', 'type = "essay"', "type", "essay"),
    "single with two keys": ("answer = 1\n", "answer = [1, 2]\n", "answer", "exactly one key"),
    "single key out of range": ("answer = 1\n", "answer = 4\n", "answer", "out of range"),
    "single key not an int": ("answer = 1\n", 'answer = "b"\n', "answer", "0-based index"),
    "single key a bool": ("answer = 1\n", "answer = true\n", "answer", "0-based index"),
    "multiple key out of range": ("answer = [0, 2]", "answer = [0, 5]", "answer", "0..4"),
    "multiple key repeated": ("answer = [0, 2]", "answer = [0, 0]", "answer", "twice"),
    "multiple keys everything": ("answer = [0, 2]", "answer = [0, 1, 2, 3, 4]", "answer", "every option"),
    "too few explanations": (
        'explanations = ["not a", "yes b", "not c", "not d"]',
        'explanations = ["not a", "yes b", "not c"]',
        "explanations",
        "3 entries for 4 options",
    ),
    "empty explanation": ('"yes b"', '""', "explanations", "non-empty"),
    "one option": ('options = ["a", "b", "c", "d"]', 'options = ["a"]', "options", "at least two"),
    "duplicate options": (
        'options = ["a", "b", "c", "d"]',
        'options = ["a", "a", "c", "d"]',
        "options",
        "same text",
    ),
    "no outcomes": ('outcomes = ["3.2"]', "outcomes = []", "outcomes", "at least one"),
    "bad outcome id": ('outcomes = ["3.2"]', 'outcomes = ["three"]', "outcomes", "'three'"),
    "empty prompt": ('prompt = "Pick b."', 'prompt = "  "', "prompt", "non-empty"),
    "numeric without answer_code": (
        'answer_code = "triton.cdiv(98432, 1024)"\n',
        "",
        "answer_code",
        "expression",
    ),
    "numeric answer_code syntax": (
        '"triton.cdiv(98432, 1024)"',
        '"triton.cdiv(98432,"',
        "answer_code",
        "valid",
    ),
    "numeric answer not a number": ("answer = 97", 'answer = "97"', "answer", "finite number"),
    "numeric negative tolerance": ("tolerance = 0.001", "tolerance = -1", "tolerance", ">= 0"),
    "numeric without explanation": ('explanation = "ceiling division"\n', "", "explanation", "explains"),
    "numeric with options": (
        'explanation = "ceiling division"',
        'explanation = "x"\noptions = ["1"]',
        "options",
        "not a field",
    ),
    "typo in a field name": (
        'explanation = "a closing note"',
        'explanaton = "a closing note"',
        "explanaton",
        "not a field",
    ),
    "code question without code": ('code = """\nprint(1 + 1)\n"""\n', "", "code", "complete program"),
    "code that is not python": ("print(1 + 1)", "print(1 +", "code", "not valid Python"),
    "pass mark above 1": ("pass_mark = 0.75", "pass_mark = 80", "pass_mark", "fraction"),
    "unknown top-level field": ("pass_mark = 0.75", "pass_mark = 0.75\ntitle = 'x'", "title", "top-level"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_validation_names_file_question_and_field(tmp_path: Path, name: str) -> None:
    old, new, field, words = BROKEN[name]
    source = textwrap.dedent(GOOD)
    assert old in source, f"test set-up: {old!r} is not in the good bank"
    path = write(tmp_path, source.replace(old, new, 1))
    problems = quiz.validate_bank(path)
    assert problems, f"{name}: not caught"
    hit = [p for p in problems if f"`{field}`" in p and words in p]
    assert hit, f"{name}: expected a problem about `{field}` mentioning {words!r}, got {problems}"
    assert all(str(path) in p for p in problems)
    if field != "pass_mark" and field != "title":
        assert "question '" in hit[0] or "questions[" in hit[0]
    with pytest.raises(quiz.QuizBankError) as info:
        quiz.load_bank(path)
    assert info.value.problems == problems


def test_validation_reports_every_problem_at_once(tmp_path: Path) -> None:
    text = textwrap.dedent(GOOD).replace("answer = 1\n", "answer = 9\n").replace('id = "many"', 'id = "one"')
    problems = quiz.validate_bank(write(tmp_path, text))
    assert len(problems) >= 2


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("pass_mark = [", "not valid TOML"),
        ("pass_mark = 0.8\n", "no [[questions]]"),
        ("questions = [1]", "table"),
    ],
)
def test_unreadable_or_empty_banks(tmp_path: Path, content: str, words: str) -> None:
    problems = quiz.validate_bank(write(tmp_path, content))
    assert problems and words in problems[0]


def test_missing_bank(tmp_path: Path) -> None:
    assert "missing" in quiz.validate_bank(tmp_path / "nope.toml")[0]


def test_computed_answers_are_checked(tmp_path: Path, bank: quiz.Bank) -> None:
    assert quiz.computed_answer_problems(bank) == []
    assert quiz.computed_answer(bank.question("count")) == 97
    assert quiz.computed_answer(bank.question("ratio")) == 0.083
    stale = quiz.load_bank(write(tmp_path, GOOD.replace("answer = 97", "answer = 96"), "stale.toml"))
    (problem,) = quiz.computed_answer_problems(stale)
    assert "'count'" in problem and "96" in problem and "97" in problem
    broken = quiz.load_bank(write(tmp_path, GOOD.replace("triton.cdiv(98432, 1024)", "1 / 0"), "broken.toml"))
    assert "ZeroDivisionError" in quiz.computed_answer_problems(broken)[0]


# ---- shuffling ----------------------------------------------------------------------------------------


def test_shuffle_is_stable_for_a_seed_and_a_permutation(bank: quiz.Bank) -> None:
    first, again = quiz.shuffled(bank, 7), quiz.shuffled(bank, 7)
    assert first.orders == again.orders
    for q in bank.questions:
        if q.is_choice:
            assert sorted(first.order(q)) == list(range(len(q.options)))
        else:
            assert q.id not in first.orders
    orders = {tuple(quiz.shuffled(bank, seed).order(bank.question("many"))) for seed in range(30)}
    assert len(orders) > 5, "different seeds should give different orders"


def test_shuffle_does_not_depend_on_hash_randomisation(tmp_path: Path) -> None:
    import subprocess

    path = write(tmp_path, GOOD)
    code = (
        f"from tritonlab.content import quiz; print(quiz.shuffled(quiz.load_bank({str(path)!r}), 3).orders)"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": s},
        ).stdout
        for s in ("1", "2")
    }
    assert len(outs) == 1


def test_shown_positions_map_back_to_bank_indices(bank: quiz.Bank) -> None:
    pres = quiz.shuffled(bank, 11)
    q = bank.question("one")
    shown = pres.shown(q)
    right_position = next(k for k, (index, _) in enumerate(shown) if index == 1)
    assert shown[right_position][1] == "b"
    assert pres.to_bank(q, right_position) == 1
    assert pres.to_position(q, 1) == right_position
    assert quiz.parse_response(q, str(right_position + 1), pres) == 1
    assert quiz.parse_response(q, chr(ord("a") + right_position), pres) == 1
    assert quiz.grade(q, quiz.parse_response(q, str(right_position + 1), pres)).correct


@settings(deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32), picks=st.sets(st.integers(0, 4), min_size=1))
def test_parsing_shown_choices_round_trips(seed: int, picks: set[int]) -> None:
    q = quiz.Question(
        id="many", type="multiple", prompt="p", outcomes=("1.1",), answer=(0, 2),
        options=("a", "b", "c", "d", "e"), explanations=("1", "2", "3", "4", "5"),
    )  # fmt: skip
    pres = quiz.shuffled(quiz.Bank(Path("inline.toml"), 0.8, (q,)), seed)
    text = ",".join(str(pres.to_position(q, i) + 1) for i in picks)
    assert quiz.parse_response(q, text, pres) == frozenset(picks)


# ---- parsing learner input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("qid", "text", "expected"),
    [
        ("one", "2", 1),
        ("one", " b ", 1),
        ("one", "B", 1),
        ("many", "1,3", frozenset({0, 2})),
        ("many", "a c", frozenset({0, 2})),
        ("many", "ac", frozenset({0, 2})),
        ("many", "1; 3", frozenset({0, 2})),
        ("many", "3,1,3", frozenset({0, 2})),
        ("count", "97", 97.0),
        ("count", " 97.0 ", 97.0),
        ("count", "1e2", 100.0),
        ("count", "1,000", 1000.0),
        ("ratio", "1/12", 1 / 12),
        ("prints", "2", 1),
    ],
)
def test_parse_response(bank: quiz.Bank, qid: str, text: str, expected: object) -> None:
    assert quiz.parse_response(bank.question(qid), text) == expected


@pytest.mark.parametrize(
    ("qid", "text", "words"),
    [
        ("one", "", "empty"),
        ("one", "5", "out of range; this question has options 1-4 or a-d"),
        ("one", "0", "out of range"),
        ("one", "e", "out of range"),
        ("one", "1,2", "takes one choice"),
        ("one", "two", "not a choice"),
        ("one", "-1", "not a choice"),
        ("many", "1,9", "choice 9 is out of range"),
        ("many", ",", "no choice given"),
        ("count", "ninety-seven", "not a number"),
        ("count", "1/0", "not a number"),
        ("count", "inf", "not a finite number"),
        ("count", "9,7", "not a number"),
    ],
)
def test_parse_errors_say_what_is_expected(bank: quiz.Bank, qid: str, text: str, words: str) -> None:
    with pytest.raises(QuizInputError, match=words):
        quiz.parse_response(bank.question(qid), text)


# ---- grading ------------------------------------------------------------------------------------------


def test_single_choice_grading_explains_pick_and_key(bank: quiz.Bank) -> None:
    q = bank.question("one")
    right = quiz.grade(q, 1)
    assert (right.score, right.correct, right.explanations) == (1.0, True, ("yes b",))
    wrong = quiz.grade(q, 3)
    assert (wrong.score, wrong.correct) == (0.0, False)
    assert wrong.explanations == ("not d", "yes b")
    assert [(f.option, f.picked, f.right) for f in wrong.feedback] == [(3, True, False), (1, False, True)]


@pytest.mark.parametrize(
    ("picked", "score", "correct"),
    [
        ({0, 2}, 1.0, True),
        ({0}, 0.5, False),
        ({2}, 0.5, False),
        ({0, 1}, 0.0, False),  # one right, one wrong: (1 - 1) / 2
        ({0, 2, 1}, 0.5, False),  # (2 - 1) / 2
        ({1, 3}, 0.0, False),  # clamped at 0, never negative
        ({0, 1, 2, 3, 4}, 0.0, False),  # ticking everything earns nothing: (2 - 3) / 2 -> 0
    ],
)
def test_multiple_select_partial_credit(
    bank: quiz.Bank, picked: set[int], score: float, correct: bool
) -> None:
    g = quiz.grade(bank.question("many"), frozenset(picked))
    assert g.score == pytest.approx(score)
    assert g.correct is correct
    shown = {f.option for f in g.feedback if f.option is not None}
    assert shown == picked | {0, 2}, "every picked option and every right option is explained"
    assert g.explanations[-1] == "a closing note"


@settings(deadline=None)
@given(st.sets(st.integers(0, 4)))
def test_partial_credit_is_always_within_0_and_1(picked: set[int]) -> None:
    q = quiz.Question(
        id="m", type="multiple", prompt="p", outcomes=("1.1",), answer=(0, 2),
        options=tuple("abcde"), explanations=tuple("12345"),
    )  # fmt: skip
    if not picked:
        with pytest.raises(QuizInputError):
            quiz.grade(q, frozenset())
        return
    g = quiz.grade(q, frozenset(picked))
    assert 0.0 <= g.score <= 1.0
    assert (g.score == 1.0) == (picked == {0, 2}) == g.correct


def test_numeric_grading_with_tolerance(bank: quiz.Bank) -> None:
    count, ratio = bank.question("count"), bank.question("ratio")
    assert quiz.grade(count, 97.0).correct
    assert not quiz.grade(count, 96.0).correct
    assert quiz.grade(count, 97.0).explanations == ("ceiling division",)
    assert quiz.grade(ratio, 1 / 12).correct  # 0.0833 is within 0.001 of 0.083
    assert quiz.grade(ratio, 0.084).correct
    assert not quiz.grade(ratio, 0.085).correct


def test_grade_rejects_responses_of_the_wrong_kind(bank: quiz.Bank) -> None:
    with pytest.raises(QuizInputError):
        quiz.grade(bank.question("one"), 7)
    with pytest.raises(QuizInputError):
        quiz.grade(bank.question("one"), frozenset({0, 1}))
    with pytest.raises(QuizInputError):
        quiz.grade(bank.question("count"), frozenset({1}))


def test_format_response_stores_bank_indices(bank: quiz.Bank) -> None:
    assert quiz.format_response(bank.question("many"), frozenset({2, 0})) == "0,2"
    assert quiz.format_response(bank.question("one"), 1) == "1"
    assert quiz.format_response(bank.question("count"), 1003520.0) == "1003520"
    assert quiz.format_response(bank.question("ratio"), 0.083) == "0.083"


# ---- quiz result and pass mark -----------------------------------------------------------------------


def test_result_counts_unanswered_questions_as_zero(bank: quiz.Bank) -> None:
    grades = [quiz.grade(bank.question("one"), 1), quiz.grade(bank.question("many"), frozenset({0}))]
    r = quiz.result(bank, grades)
    assert r.answered == 2 and r.total == 5
    assert r.score == pytest.approx(1.5 / 5)
    assert not r.passed


def test_pass_mark_is_inclusive(bank: quiz.Bank) -> None:
    answers = {
        "one": 1,
        "many": frozenset({0, 2}),
        "count": 97.0,
        "ratio": 0.5,
    }  # 3 of 5 right, "prints" missing
    grades = {qid: quiz.grade(bank.question(qid), a) for qid, a in answers.items()}
    assert not quiz.result(bank, grades).passed  # 0.6 < 0.75
    grades["prints"] = quiz.grade(bank.question("prints"), 1)
    r = quiz.result(bank, grades)
    assert r.score == pytest.approx(0.8) and r.passed
    exact = quiz.Bank(bank.path, 0.8, bank.questions)
    assert quiz.result(exact, grades).passed  # 0.8 >= 0.8


def test_result_refuses_grades_for_unknown_questions(bank: quiz.Bank) -> None:
    other = quiz.Grade("elsewhere", 1.0, True, 0)
    with pytest.raises(KeyError):
        quiz.result(bank, [other])


# ---- JSON views ---------------------------------------------------------------------------------------


def test_question_json_leaks_no_answers(bank: quiz.Bank) -> None:
    pres = quiz.shuffled(bank, 5)
    for q in bank.questions:
        data = quiz.question_json(q, pres)
        assert not {"answer", "explanations", "explanation", "answer_code"} & set(data)
        if q.is_choice:
            assert [o["text"] for o in data["options"]] == [text for _, text in pres.shown(q)]
            assert [o["choice"] for o in data["options"]] == list(range(1, len(q.options) + 1))
    assert "code" in quiz.question_json(bank.question("prints"), pres)


def test_grade_json_uses_shown_numbering(bank: quiz.Bank) -> None:
    pres = quiz.shuffled(bank, 5)
    q = bank.question("one")
    shown_right = pres.to_position(q, 1) + 1
    data = quiz.grade_json(q, quiz.grade(q, 1), pres)
    assert data["answer"] == [shown_right] and data["response"] == [shown_right] and data["correct"]
    assert data["feedback"][0]["explanation"] == "yes b"
