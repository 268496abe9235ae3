"""Quiz banks (quiz.<lang>.toml): the data model, loading and validation. Pure: reads only the bank file.

The format is specified in docs/authoring.md ("Quizzes"). `validate_bank` returns every problem, each naming
the file, the question and the field; `load_bank` raises QuizBankError with the same list.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TYPES = ("single", "multiple", "numeric", "code")
CHOICE_TYPES = ("single", "multiple", "code")
DEFAULT_PASS_MARK = 0.8
_QUESTION_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_OUTCOME_ID = re.compile(r"^\d+\.\d+$")
_FIELDS = {
    "single": {"options", "answer", "explanations"},
    "multiple": {"options", "answer", "explanations"},
    "code": {"options", "answer", "explanations", "code"},
    "numeric": {"answer", "answer_code", "tolerance", "digits"},
}
_COMMON = {"id", "type", "outcomes", "prompt", "explanation"}


class QuizBankError(Exception):
    """A bank that does not validate; `problems` lists every problem found."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class Question:
    id: str
    type: str
    prompt: str
    outcomes: tuple[str, ...]
    answer: int | tuple[int, ...] | float
    options: tuple[str, ...] = ()
    explanations: tuple[str, ...] = ()
    explanation: str = ""  # numeric: why the answer is what it is; others: optional closing note
    code: str = ""  # code questions: the program whose printed line is options[answer]
    answer_code: str = ""  # numeric: a Python expression that evaluates to answer
    tolerance: float = 0.0
    digits: int | None = None  # numeric: answer_code's value is rounded to this many decimals

    @property
    def is_choice(self) -> bool:
        return self.type in CHOICE_TYPES

    @property
    def keyed(self) -> frozenset[int]:
        """The right option indices of a choice question."""
        if isinstance(self.answer, tuple):
            return frozenset(self.answer)
        return frozenset({int(self.answer)}) if self.is_choice else frozenset()


@dataclass(frozen=True)
class Bank:
    path: Path
    pass_mark: float
    questions: tuple[Question, ...]

    def question(self, qid: str) -> Question:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(qid)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(q.id for q in self.questions)


# ---- loading and validation --------------------------------------------------------------------------


class _Checker:
    """Collects problems for one question; every message names the file, the question and the field."""

    def __init__(self, path: Path, label: str) -> None:
        self.path, self.label, self.problems = path, label, []

    def bad(self, fld: str, what: str) -> None:
        self.problems.append(f"{self.path}: {self.label}, field `{fld}`: {what}")


def _check_question(path: Path, index: int, data: Any, seen: set[str]) -> tuple[list[str], Question | None]:
    if not isinstance(data, dict):
        return [f"{path}: questions[{index}]: each question is a [[questions]] table"], None
    qid = data.get("id")
    ck = _Checker(path, f"question {qid!r}" if isinstance(qid, str) and qid else f"questions[{index}]")
    if not isinstance(qid, str) or not _QUESTION_ID.match(qid):
        ck.bad("id", "must be lower-case words joined by '-', e.g. \"programs-launched\"")
    elif qid in seen:
        ck.bad("id", "is used by an earlier question; ids must be unique in the bank")
    else:
        seen.add(qid)
    qtype = data.get("type")
    if qtype not in TYPES:
        ck.bad("type", f"is {qtype!r}; use one of {', '.join(TYPES)}")
        return ck.problems, None
    allowed = _COMMON | _FIELDS[qtype]
    for key in sorted(set(data) - allowed):
        ck.bad(key, f"is not a field of a {qtype} question (fields: {', '.join(sorted(allowed))})")
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        ck.bad("prompt", "must be non-empty text")
    outcomes = data.get("outcomes")
    if not isinstance(outcomes, list) or not outcomes:
        ck.bad("outcomes", 'list at least one outcome id, e.g. ["5.1"]')
        outcomes = []
    for oid in outcomes:
        if not isinstance(oid, str) or not _OUTCOME_ID.match(oid):
            ck.bad("outcomes", f'{oid!r} is not an outcome id like "5.1"')
    note = data.get("explanation", "")
    if not isinstance(note, str):
        ck.bad("explanation", "must be text")
        note = ""
    base = {"id": qid, "type": qtype, "prompt": prompt, "outcomes": tuple(outcomes), "explanation": note}
    if qtype == "numeric":
        question = _check_numeric(data, ck, base)
    else:
        question = _check_choice(data, ck, base)
    return ck.problems, (question if not ck.problems else None)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_numeric(data: dict[str, Any], ck: _Checker, base: dict[str, Any]) -> Question | None:
    answer, code = data.get("answer"), data.get("answer_code")
    tol, digits = data.get("tolerance", 0), data.get("digits")
    if not _is_number(answer):
        ck.bad("answer", "a numeric question's answer is a finite number")
    if not isinstance(code, str) or not code.strip():
        ck.bad(
            "answer_code",
            'give a Python expression that computes the answer, e.g. "triton.cdiv(98432, 1024)"',
        )
    else:
        try:
            compile(code, "<answer_code>", "eval")
        except SyntaxError as exc:
            ck.bad("answer_code", f"is not a valid Python expression ({exc.msg})")
    if not _is_number(tol) or tol < 0:
        ck.bad("tolerance", "must be a number >= 0")
    if digits is not None and (not _is_int(digits) or digits < 0):
        ck.bad("digits", "must be a whole number >= 0")
    if not base["explanation"].strip():
        ck.bad("explanation", "a numeric question explains its answer here")
    if ck.problems:
        return None
    return Question(**base, answer=answer, answer_code=code, tolerance=float(tol), digits=digits)


def _check_choice(data: dict[str, Any], ck: _Checker, base: dict[str, Any]) -> Question | None:
    qtype = base["type"]
    options, answer, explanations = data.get("options"), data.get("answer"), data.get("explanations")
    if (
        not isinstance(options, list)
        or len(options) < 2
        or not all(isinstance(o, str) and o.strip() for o in options)
    ):
        ck.bad("options", "list at least two non-empty options")
        options = []
    elif len(set(options)) != len(options):
        ck.bad("options", "two options have the same text")
    n = len(options)
    if qtype == "multiple":
        if not isinstance(answer, list) or not answer or not all(_is_int(a) for a in answer):
            ck.bad("answer", "a multiple-select answer is a list of 0-based option indices, e.g. [0, 2]")
        elif len(set(answer)) != len(answer):
            ck.bad("answer", "lists an index twice")
        elif n and any(not 0 <= a < n for a in answer):
            ck.bad("answer", f"indices must be in 0..{n - 1} (there are {n} options)")
        elif n and len(answer) >= n:
            ck.bad("answer", "keys every option; leave at least one wrong option")
    elif isinstance(answer, list):
        ck.bad(
            "answer",
            f'a {qtype} question has exactly one key (an integer); use type = "multiple" for several',
        )
    elif not _is_int(answer):
        ck.bad("answer", "must be the 0-based index of the right option")
    elif n and not 0 <= answer < n:
        ck.bad("answer", f"is {answer}, out of range 0..{n - 1} (there are {n} options)")
    if not isinstance(explanations, list) or not all(isinstance(e, str) and e.strip() for e in explanations):
        ck.bad("explanations", "list one non-empty explanation per option")
    elif n and len(explanations) != n:
        ck.bad("explanations", f"has {len(explanations)} entries for {n} options; give one per option")
    code = data.get("code", "")
    if qtype == "code":
        if not isinstance(code, str) or not code.strip():
            ck.bad("code", "a code question needs the complete program whose output the options describe")
        else:
            try:
                compile(code, f"<{base['id']}>", "exec")
            except SyntaxError as exc:
                ck.bad("code", f"is not valid Python (line {exc.lineno}: {exc.msg})")
    if ck.problems:
        return None
    key = tuple(answer) if qtype == "multiple" else answer
    return Question(**base, answer=key, options=tuple(options), explanations=tuple(explanations), code=code)


def _parse(path: Path) -> tuple[Bank | None, list[str]]:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, [f"{path}: file is missing"]
    except UnicodeDecodeError as exc:
        return None, [f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})"]
    except tomllib.TOMLDecodeError as exc:
        return None, [f"{path}: not valid TOML: {exc}"]
    problems: list[str] = []
    for key in sorted(set(data) - {"pass_mark", "questions"}):
        problems.append(
            f"{path}: field `{key}`: unknown top-level field (expected pass_mark and [[questions]])"
        )
    pass_mark = data.get("pass_mark", DEFAULT_PASS_MARK)
    if not _is_number(pass_mark) or not 0 < pass_mark <= 1:
        problems.append(f"{path}: field `pass_mark`: must be a fraction in (0, 1], e.g. 0.8")
    raw = data.get("questions")
    if not isinstance(raw, list) or not raw:
        problems.append(f"{path}: field `questions`: the bank has no [[questions]]")
        raw = []
    seen: set[str] = set()
    questions = []
    for i, item in enumerate(raw):
        found, question = _check_question(path, i, item, seen)
        problems.extend(found)
        if question is not None:
            questions.append(question)
    if problems:
        return None, problems
    return Bank(path=path, pass_mark=float(pass_mark), questions=tuple(questions)), []


def validate_bank(path: Path) -> list[str]:
    """Every problem in the bank at `path`, each naming the file, the question and the field; [] if none."""
    return _parse(Path(path))[1]


def load_bank(path: Path) -> Bank:
    bank, problems = _parse(Path(path))
    if bank is None:
        raise QuizBankError(problems)
    return bank


def computed_answer(question: Question) -> float:
    """Evaluate a numeric question's answer_code with `math` and `triton` available (triton imported lazily;
    it does not import torch). Rounded to `digits` when given."""
    import types

    class _LazyTriton(types.SimpleNamespace):
        def __getattr__(self, name: str) -> Any:
            import triton

            return getattr(triton, name)

    value = eval(question.answer_code, {"__builtins__": __builtins__, "math": math, "triton": _LazyTriton()})
    return round(value, question.digits) if question.digits is not None else value


def computed_answer_problems(bank: Bank) -> list[str]:
    """Numeric questions whose stored answer disagrees with what answer_code computes."""
    problems = []
    for q in bank.questions:
        if q.type != "numeric":
            continue
        try:
            value = computed_answer(q)
        except Exception as exc:  # report any failure of the author's expression
            problems.append(
                f"{bank.path}: question {q.id!r}, field `answer_code`: raised {type(exc).__name__}: {exc}"
            )
            continue
        if not math.isclose(float(value), float(q.answer), rel_tol=1e-9, abs_tol=1e-12):
            problems.append(
                f"{bank.path}: question {q.id!r}, field `answer`: stored {q.answer!r} but answer_code gives {value!r}"
            )
    return problems
