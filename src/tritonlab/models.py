"""Plain data shared by every layer: the course as loaded, and what a check produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

Text = dict[str, str]  # language code -> text


def pick(text: Text, lang: str) -> str:
    """The text in `lang`, else English (callers mark fallbacks where that matters)."""
    return text.get(lang) or text.get("en") or ""


@dataclass(frozen=True)
class Outcome:
    id: str
    section: str
    text: Text


@dataclass(frozen=True)
class Example:
    file: Path
    title: Text


@dataclass(frozen=True)
class CheckedNumber:
    quote: str
    value: str
    code: str
    digits: int | None = None


@dataclass(frozen=True)
class Exercise:
    id: str
    lesson_id: str
    dir: Path
    function: str
    title: Text
    summary: Text
    hints: dict[str, tuple[str, ...]]
    outcomes: tuple[str, ...]
    speed_goal: float | None = None  # shown after a passing GPU check: × the course reference; never graded
    # exercise.toml `hint_after_failures`: hint i opens after that many failed checks of the exercise (or a
    # pass); empty when no hint waits
    hint_after_failures: tuple[int, ...] = ()

    @property
    def starter(self) -> Path:
        return self.dir / "starter.py"

    @property
    def solution(self) -> Path:
        return self.dir / "solution.py"

    @property
    def module_name(self) -> str:
        return self.id.replace("-", "_")

    def hint_list(self, lang: str) -> tuple[str, ...]:
        return self.hints.get(lang) or self.hints.get("en", ())

    def hint_gate(self, index: int) -> int:
        """Failed checks of this exercise that hint `index` (0-based) waits for; 0 when it waits for none."""
        gates = self.hint_after_failures
        return gates[index] if 0 <= index < len(gates) else 0


@dataclass(frozen=True)
class HintLocked:
    """The next hint is not shown yet: it waits for more failed checks of its exercise. Not a tuple on purpose:
    a caller that unpacks `(number, total, text)` without looking fails instead of showing nothing useful."""

    number: int  # the hint's number, from 1
    total: int
    needed: int  # failed checks it waits for
    failed: int  # failed checks so far


@dataclass(frozen=True)
class Lesson:
    id: str
    number: int
    dir: Path
    title: Text
    summary: Text
    outcomes: tuple[Outcome, ...]
    exercises: tuple[Exercise, ...]
    examples: tuple[Example, ...]
    numbers: tuple[CheckedNumber, ...]

    def text_path(self, lang: str) -> Path:
        path = self.dir / f"lesson.{lang}.md"
        return path if path.is_file() else self.dir / "lesson.en.md"

    def quiz_path(self, lang: str) -> Path:
        path = self.dir / f"quiz.{lang}.toml"
        return path if path.is_file() else self.dir / "quiz.en.toml"


@dataclass(frozen=True)
class Course:
    dir: Path
    format_version: int
    title: Text
    welcome: Text
    final: Text
    lessons: tuple[Lesson, ...]

    def lesson(self, key: str | int) -> Lesson:
        """Find a lesson by number ("5"), id ("05-vector-add") or slug ("vector-add")."""
        text = str(key).strip()
        for lesson in self.lessons:
            if text in (lesson.id, str(lesson.number), f"{lesson.number:02d}", lesson.id.split("-", 1)[1]):
                return lesson
        raise KeyError(text)

    def exercises(self) -> list[Exercise]:
        return [ex for lesson in self.lessons for ex in lesson.exercises]

    def exercise(self, exercise_id: str) -> Exercise:
        for ex in self.exercises():
            if ex.id == exercise_id:
                return ex
        raise KeyError(exercise_id)


# ---- what a check produces -------------------------------------------------------------------------

FAILURE_KINDS = (
    "wrong-result",
    "unwritten-output",
    "out-of-bounds-read",
    "out-of-bounds-write",
    "crash",
    "nan-mismatch",
    "wrong-dtype",
    "wrong-shape",
    "missing-validation",
    "no-kernel-launch",
    "torch-fallback",
    "host-copy",
    "host-computed",
    "does-not-compile",  # a launched kernel does not lower for a GPU (Python or a plain global in its body)
    "too-many-launches",
    "low-occupancy",
    "not-persistent",  # lesson 14: the launch is not one program per SM looping over tiles
    "no-tma",  # lesson 14: compiled for sm_90, the kernel does not move its tiles with the TMA engine
    "input-modified",
    "exception",
    "timeout",
    "worker-lost",  # a remote worker (executor=ray), or the local harness, died mid-run and under the retry: nothing graded
)


@dataclass(frozen=True)
class Failure:
    case: str
    kind: str
    message: str
    cause: str = ""
    where: str = ""  # "file:line" in the learner's file, when known

    def __post_init__(self) -> None:
        if self.kind not in FAILURE_KINDS:
            raise ValueError(f"unknown failure kind {self.kind!r}")

    def to_json(self) -> dict:
        data = {"case": self.case, "kind": self.kind, "message": self.message}
        if self.cause:
            data["cause"] = self.cause
        if self.where:
            data["where"] = self.where
        return data


@dataclass(frozen=True)
class CaseResult:
    name: str
    passed: bool


@dataclass
class Verdict:
    exercise: str
    backend: str
    seed: int
    file: str
    cases: list[CaseResult] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    output: str = ""
    duration_s: float = 0.0
    speed: dict | None = None  # a passing GPU check's timing (perf/bench_learner.speed_summary); not graded
    speed_reason: str = ""  # why there is no speed, when there is none
    executor: str = "local"  # where it ran: "local" (this machine's zygote) or "ray" (a cluster worker)
    node: str = ""  # the machine that ran it
    timings: dict = field(default_factory=dict)  # seconds per phase (queue, cases, runs, replay, judge)

    @property
    def passed(self) -> bool:
        return bool(self.cases) and not self.failures and all(c.passed for c in self.cases)

    @classmethod
    def from_json(cls, data: dict) -> Verdict:
        """The verdict `to_json` wrote (the check daemon sends it to the CLI this way)."""
        return cls(
            exercise=str(data.get("exercise", "")),
            backend=str(data.get("backend", "")),
            seed=int(data.get("seed") or 0),
            file=str(data.get("file", "")),
            cases=[CaseResult(str(c.get("name", "")), bool(c.get("passed"))) for c in data.get("cases", [])],
            failures=[
                Failure(
                    str(f.get("case", "")),
                    str(f.get("kind", "")),
                    str(f.get("message", "")),
                    str(f.get("cause", "")),
                    str(f.get("where", "")),
                )
                for f in data.get("failures", [])
            ],
            notes=[str(n) for n in data.get("notes", [])],
            duration_s=float(data.get("duration_s") or 0.0),
            speed=data.get("speed") if isinstance(data.get("speed"), dict) else None,
            speed_reason=str(data.get("speed_reason", "")),
            executor=str(data.get("executor", "local")),
            node=str(data.get("node", "")),
        )

    def to_json(self) -> dict:
        return {
            "exercise": self.exercise,
            "passed": self.passed,
            "backend": self.backend,
            "seed": self.seed,
            "file": self.file,
            "cases": [{"name": c.name, "passed": c.passed} for c in self.cases],
            "failures": [f.to_json() for f in self.failures],
            "notes": list(self.notes),
            "duration_s": round(self.duration_s, 3),
            "speed": self.speed,
            **({"speed_reason": self.speed_reason} if self.speed is None and self.speed_reason else {}),
            "executor": self.executor,
            "node": self.node,
            **({"timings": _rounded(self.timings)} if self.timings else {}),
        }


def _rounded(value: object) -> object:
    """Timings for JSON: floats to milliseconds, nested dicts alike."""
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return round(value, 3) if isinstance(value, float) else value
