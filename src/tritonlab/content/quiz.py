"""Quizzes: load and validate a bank, shuffle options, parse answers, grade. Pure: no I/O but reading the bank.

Grading rules (also in docs/authoring.md):
- single and code: 1 point for the keyed option, else 0.
- multiple: (right options picked - wrong options picked) / number of right options, clamped to [0, 1];
  `correct` only when the picked set is exactly the keyed set.
- numeric: 1 point when |response - answer| <= tolerance (plus a hair for float rounding), else 0.
- a quiz's score is the mean over all of the bank's questions (unanswered ones score 0); it is passed when
  score >= pass_mark (default 0.8).

Choices are numbered for learners from 1 (or lettered from "a") in the order they were shown; the engine
maps them back to the bank's 0-based option indices, which are what gets graded and stored.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tritonlab.content.quiz_bank import (
    CHOICE_TYPES,
    DEFAULT_PASS_MARK,
    TYPES,
    Bank,
    Question,
    QuizBankError,
    computed_answer,
    computed_answer_problems,
    load_bank,
    validate_bank,
)

__all__ = [
    "CHOICE_TYPES",
    "DEFAULT_PASS_MARK",
    "TYPES",
    "Bank",
    "Feedback",
    "Grade",
    "Presentation",
    "Question",
    "QuizBankError",
    "QuizInputError",
    "QuizResult",
    "Response",
    "choice_labels",
    "computed_answer",
    "computed_answer_problems",
    "format_response",
    "grade",
    "grade_json",
    "letter",
    "load_bank",
    "parse_response",
    "question_json",
    "result",
    "result_json",
    "shuffled",
    "validate_bank",
]

Response = int | frozenset[int] | float


class QuizInputError(ValueError):
    """A learner's answer that cannot be read; the message says what was expected."""


@dataclass(frozen=True)
class Feedback:
    option: int | None  # the bank's 0-based option index; None for numeric questions
    picked: bool
    right: bool
    text: str


@dataclass(frozen=True)
class Grade:
    question: str
    score: float
    correct: bool
    response: Response
    feedback: tuple[Feedback, ...] = field(default_factory=tuple)

    @property
    def explanations(self) -> tuple[str, ...]:
        return tuple(f.text for f in self.feedback)


@dataclass(frozen=True)
class QuizResult:
    score: float
    passed: bool
    answered: int
    total: int
    pass_mark: float


# ---- presentation: per-attempt option order ------------------------------------------------------------


@dataclass(frozen=True)
class Presentation:
    """The order options are shown in for one attempt. orders[qid][k] is the bank index shown at position k."""

    seed: int
    orders: Mapping[str, tuple[int, ...]]

    def order(self, question: Question) -> tuple[int, ...]:
        return self.orders.get(question.id, tuple(range(len(question.options))))

    def shown(self, question: Question) -> list[tuple[int, str]]:
        """(bank index, text) for each option, in the order shown."""
        return [(i, question.options[i]) for i in self.order(question)]

    def to_bank(self, question: Question, position: int) -> int:
        return self.order(question)[position]

    def to_position(self, question: Question, index: int) -> int:
        return self.order(question).index(index)


def shuffled(bank: Bank, seed: int) -> Presentation:
    """Shuffle every choice question's options; the same seed always gives the same order."""
    orders = {}
    for q in bank.questions:
        if q.is_choice:
            order = list(range(len(q.options)))
            random.Random(f"{seed}:{q.id}").shuffle(order)
            orders[q.id] = tuple(order)
    return Presentation(seed=seed, orders=orders)


# ---- learner input -----------------------------------------------------------------------------------


def choice_labels(n: int) -> str:
    return f"1-{n} or a-{chr(ord('a') + n - 1)}" if n <= 26 else f"1-{n}"


def _one_choice(token: str, n: int) -> int:
    """A 0-based position from "3" or "c"."""
    if token.isdigit():
        pos = int(token)
        if not 1 <= pos <= n:
            raise QuizInputError(
                f"choice {token} is out of range; this question has options {choice_labels(n)}"
            )
        return pos - 1
    if len(token) == 1 and "a" <= token.lower() <= "z":
        pos = ord(token.lower()) - ord("a")
        if pos >= n:
            raise QuizInputError(
                f"choice {token!r} is out of range; this question has options {choice_labels(n)}"
            )
        return pos
    raise QuizInputError(
        f"{token!r} is not a choice; answer with option numbers or letters ({choice_labels(n)})"
    )


def parse_response(question: Question, text: str, presentation: Presentation | None = None) -> Response:
    """Read a learner's answer: "2" or "b" (single/code), "1,3" / "a c" / "ac" (multiple), "97" or "0.25" or
    "1/12" (numeric). Choices count from 1 in the shown order and come back as bank indices."""
    raw = text.strip()
    if not raw:
        raise QuizInputError("the answer is empty")
    if question.type == "numeric":
        return _parse_number(raw)
    n = len(question.options)
    tokens = [t for t in re.split(r"[\s,;]+", raw) if t]
    if len(tokens) == 1 and tokens[0].isalpha() and len(tokens[0]) > 1 and question.type == "multiple":
        tokens = list(tokens[0])  # "ac"
    if not tokens:
        raise QuizInputError(f"no choice given; answer with option numbers or letters ({choice_labels(n)})")
    positions = [_one_choice(t, n) for t in tokens]
    pres = presentation or Presentation(seed=0, orders={})
    indices = [pres.to_bank(question, p) for p in positions]
    if question.type == "multiple":
        return frozenset(indices)
    if len(set(indices)) != 1:
        raise QuizInputError(f"this question takes one choice, got {len(tokens)}: {raw!r}")
    return indices[0]


def _parse_number(raw: str) -> float:
    text = raw.replace("_", "")
    if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?", text):
        text = text.replace(",", "")  # 1,000,000
    try:
        if "/" in text:
            num, den = text.split("/", 1)
            return float(num) / float(den)
        value = float(text)
    except (ValueError, ZeroDivisionError):
        raise QuizInputError(f"{raw!r} is not a number; write it like 97, 0.25, 1e6 or 1/12") from None
    if not math.isfinite(value):
        raise QuizInputError(f"{raw!r} is not a finite number")
    return value


def format_response(question: Question, response: Response) -> str:
    """How a response is stored: bank indices ("2", "0,3") or the number."""
    if isinstance(response, frozenset):
        return ",".join(str(i) for i in sorted(response))
    if question.type == "numeric":
        value = float(response)
        return str(int(value)) if value.is_integer() else repr(value)
    return str(response)


# ---- grading -----------------------------------------------------------------------------------------


def grade(question: Question, response: Response) -> Grade:
    """Score one answer (bank indices / a number) and collect the explanations the learner should read."""
    note = (Feedback(None, False, False, question.explanation),) if question.explanation else ()
    if question.type == "numeric":
        if isinstance(response, frozenset):
            raise QuizInputError(f"question {question.id!r} expects a number")
        value = float(response)
        slack = question.tolerance + 1e-9 * max(1.0, abs(float(question.answer)))
        correct = abs(value - float(question.answer)) <= slack
        return Grade(question.id, 1.0 if correct else 0.0, correct, value, note)
    picked = _as_indices(question, response)
    keyed = question.keyed
    if question.type == "multiple":
        hits, misses = len(picked & keyed), len(picked - keyed)
        score = min(1.0, max(0.0, (hits - misses) / len(keyed)))
        shown = sorted(picked | keyed)
    else:
        score = 1.0 if picked == keyed else 0.0
        shown = sorted(picked) + sorted(keyed - picked)
    feedback = tuple(Feedback(i, i in picked, i in keyed, question.explanations[i]) for i in shown)
    result = frozenset(picked) if question.type == "multiple" else next(iter(picked))
    return Grade(question.id, score, picked == keyed, result, feedback + note)


def _as_indices(question: Question, response: Response) -> frozenset[int]:
    if isinstance(response, bool) or isinstance(response, float) and not response.is_integer():
        raise QuizInputError(f"question {question.id!r} expects option indices")
    picked = frozenset(response) if isinstance(response, Iterable) else frozenset({int(response)})
    n = len(question.options)
    if not picked or any(not 0 <= int(i) < n for i in picked):
        raise QuizInputError(f"question {question.id!r} has options 0..{n - 1}; got {sorted(picked)}")
    if question.type != "multiple" and len(picked) != 1:
        raise QuizInputError(f"question {question.id!r} takes one choice")
    return frozenset(int(i) for i in picked)


def result(bank: Bank, grades: Mapping[str, Grade] | Sequence[Grade]) -> QuizResult:
    """Total over every question of the bank (unanswered ones count 0), and whether it reaches pass_mark."""
    by_id = dict(grades) if isinstance(grades, Mapping) else {g.question: g for g in grades}
    unknown = set(by_id) - set(bank.ids)
    if unknown:
        raise KeyError(f"grades for questions not in the bank: {', '.join(sorted(unknown))}")
    total = len(bank.questions)
    score = sum(g.score for g in by_id.values()) / total if total else 0.0
    return QuizResult(
        score=score,
        passed=score >= bank.pass_mark - 1e-9,
        answered=len(by_id),
        total=total,
        pass_mark=bank.pass_mark,
    )


# ---- JSON views (for `tritonlab quiz --json` and the web page) ---------------------------------------


def letter(position: int) -> str:
    """The letter a learner sees for a 0-based shown position."""
    return chr(ord("a") + position) if position < 26 else str(position + 1)


def question_json(question: Question, presentation: Presentation) -> dict:
    """What a learner may see before answering: no answer, no explanations, no answer_code."""
    data: dict = {
        "id": question.id,
        "type": question.type,
        "prompt": question.prompt,
        "outcomes": list(question.outcomes),
    }
    if question.code:
        data["code"] = question.code
    if question.is_choice:
        data["options"] = [
            {"choice": k + 1, "letter": letter(k), "text": text}
            for k, (_, text) in enumerate(presentation.shown(question))
        ]
    else:
        data["tolerance"] = question.tolerance
    return data


def grade_json(question: Question, g: Grade, presentation: Presentation) -> dict:
    """A graded answer, in the shown order: choices are numbered from 1 as the learner saw them."""
    data: dict = {"id": question.id, "type": question.type, "score": round(g.score, 4), "correct": g.correct}
    if question.type == "numeric":
        data["response"] = float(g.response)
        data["answer"] = question.answer
        data["tolerance"] = question.tolerance
    else:
        picked = g.response if isinstance(g.response, frozenset) else frozenset({int(g.response)})
        data["response"] = sorted(presentation.to_position(question, i) + 1 for i in picked)
        data["answer"] = sorted(presentation.to_position(question, i) + 1 for i in question.keyed)
        data["feedback"] = [
            {
                "choice": presentation.to_position(question, f.option) + 1,
                "letter": letter(presentation.to_position(question, f.option)),
                "text": question.options[f.option],
                "picked": f.picked,
                "right": f.right,
                "explanation": f.text,
            }
            for f in g.feedback
            if f.option is not None
        ]
        if question.type == "multiple":
            data["feedback"].sort(key=lambda item: item["choice"])
    if question.explanation:
        data["explanation"] = question.explanation
    return data


def result_json(r: QuizResult) -> dict:
    return {
        "score": round(r.score, 4),
        "passed": r.passed,
        "pass_mark": r.pass_mark,
        "answered": r.answered,
        "total": r.total,
    }
