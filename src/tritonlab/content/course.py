"""Load course/ into models, validating as we go: every problem names the file and the field."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from tritonlab import config
from tritonlab.models import CheckedNumber, Course, Example, Exercise, Lesson, Outcome, Text

FORMAT_VERSION = 1
_LESSON_ID = re.compile(r"^(\d\d)-[a-z0-9]+(?:-[a-z0-9]+)*$")
_EXERCISE_ID = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
_OUTCOME_ID = re.compile(r"^\d+\.\d+$")


class CourseError(Exception):
    """A problem in the course files. `str()` says which file, which field and what to do."""

    def __init__(self, path: Path, field: str, problem: str) -> None:
        self.path = path
        self.field = field
        self.problem = problem
        where = f"{path}" + (f", field `{field}`" if field else "")
        super().__init__(f"{where}: {problem}")


def read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise CourseError(path, "", "file is missing")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise CourseError(path, "", f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise CourseError(path, "", f"not valid TOML: {exc}") from None


def _text(data: dict, key: str, path: Path, required: bool = True) -> Text:
    value = data.get(key)
    if value is None:
        if required:
            raise CourseError(
                path, key, f'missing; give at least the English text, e.g. `[{key}] en = "..."`'
            )
        return {}
    if isinstance(value, str):
        return {"en": value}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise CourseError(path, key, 'must be a table of language -> text, e.g. `en = "..."`')
    if required and not value.get("en", "").strip():
        raise CourseError(path, f"{key}.en", "the English text is missing or empty")
    return dict(value)


def _str_list(data: dict, key: str, path: Path) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CourseError(path, key, "must be a list of strings")
    return tuple(value)


def _tables(data: dict, key: str, path: Path) -> list[dict]:
    """An array of tables (`[[key]]`), or a CourseError naming the field."""
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise CourseError(path, key, f"must be an array of tables, written as [[{key}]] sections")
    return value


def load_exercise(ex_dir: Path, lesson_id: str) -> Exercise:
    path = ex_dir / "exercise.toml"
    data = read_toml(path)
    ex_id = ex_dir.name
    if not _EXERCISE_ID.match(ex_id):
        raise CourseError(ex_dir, "", "exercise folder names are lower-case words joined by '-'")
    function = data.get("function")
    if not isinstance(function, str) or not function.isidentifier():
        raise CourseError(path, "function", "must name the Python function the learner defines")
    hints_raw = data.get("hints")
    if not isinstance(hints_raw, dict) or not hints_raw.get("en"):
        raise CourseError(
            path, "hints.en", 'give at least two hints, gentle first: `[hints] en = ["...", "..."]`'
        )
    hints: dict[str, tuple[str, ...]] = {}
    for lang, items in hints_raw.items():
        if not isinstance(items, list) or not all(isinstance(h, str) and h.strip() for h in items):
            raise CourseError(path, f"hints.{lang}", "must be a list of non-empty strings")
        hints[lang] = tuple(items)
    if len(hints["en"]) < 2:
        raise CourseError(path, "hints.en", f"has {len(hints['en'])} hint(s); at least two are needed")
    gates = _hint_gates(data, path, len(hints["en"]))
    for name in ("starter.py", "solution.py"):
        if not (ex_dir / name).is_file():
            raise CourseError(ex_dir / name, "", "file is missing")
    outcomes = _str_list(data, "outcomes", path)
    for oid in outcomes:
        if not _OUTCOME_ID.match(oid):
            raise CourseError(path, "outcomes", f'{oid!r} is not an outcome id like "5.1"')
    goal = data.get("speed_goal")
    if goal is not None and (
        isinstance(goal, bool) or not isinstance(goal, int | float) or not 0 < goal < 1e6
    ):
        raise CourseError(path, "speed_goal", "must be a positive number: × the course reference's speed")
    return Exercise(
        id=ex_id,
        lesson_id=lesson_id,
        dir=ex_dir,
        function=function,
        title=_text(data, "title", path),
        summary=_text(data, "summary", path, required=False),
        hints=hints,
        outcomes=outcomes,
        speed_goal=float(goal) if goal is not None else None,
        hint_after_failures=gates,
    )


def _hint_gates(data: dict, path: Path, count: int) -> tuple[int, ...]:
    """`hint_after_failures = [0, 0, 2]`: one whole number per hint, never decreasing (hints open in order)."""
    if "hint_after_failures" not in data:
        return ()
    value = data["hint_after_failures"]
    field = "hint_after_failures"
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise CourseError(path, field, "must be a list of whole numbers, one per hint, e.g. [0, 0, 2]")
    if len(value) != count:
        raise CourseError(path, field, f"has {len(value)} number(s) for {count} hints: give one per hint")
    if any(v < 0 or v > 100 for v in value):
        raise CourseError(path, field, "each number is a count of failed checks, from 0 to 100")
    if any(b < a for a, b in zip(value, value[1:], strict=False)):
        raise CourseError(path, field, "hints are shown in order, so the numbers may not decrease")
    return tuple(value)


def load_lesson(lesson_dir: Path) -> Lesson:
    match = _LESSON_ID.match(lesson_dir.name)
    if not match:
        raise CourseError(lesson_dir, "", "lesson folders are named NN-slug, e.g. 05-vector-add")
    path = lesson_dir / "lesson.toml"
    data = read_toml(path)
    if not (lesson_dir / "lesson.en.md").is_file():
        raise CourseError(lesson_dir / "lesson.en.md", "", "file is missing: every lesson has English text")

    outcomes = []
    for i, item in enumerate(_tables(data, "outcomes", path)):
        field = f"outcomes[{i}]"
        oid, section = item.get("id"), item.get("section")
        if not isinstance(oid, str) or not _OUTCOME_ID.match(oid):
            raise CourseError(path, f"{field}.id", 'must be an outcome id like "5.1"')
        if not isinstance(section, str) or not section.strip():
            raise CourseError(path, f"{field}.section", "must name a `##` heading of lesson.en.md")
        outcomes.append(Outcome(id=oid, section=section, text=_text(item, "text", path)))

    exercises = []
    for ex_id in _str_list(data, "exercises", path):
        ex_dir = lesson_dir / "exercises" / ex_id
        if not ex_dir.is_dir():
            raise CourseError(path, "exercises", f"lists {ex_id!r} but {ex_dir} does not exist")
        exercises.append(load_exercise(ex_dir, lesson_dir.name))

    examples = []
    for i, item in enumerate(_tables(data, "examples", path)):
        file = item.get("file")
        if not isinstance(file, str):
            raise CourseError(path, f"examples[{i}].file", "must be a path relative to the lesson folder")
        if not (lesson_dir / file).is_file():
            raise CourseError(path, f"examples[{i}].file", f"{file} does not exist")
        examples.append(Example(file=lesson_dir / file, title=_text(item, "title", path, required=False)))

    numbers = []
    for i, item in enumerate(_tables(data, "numbers", path)):
        field = f"numbers[{i}]"
        if not all(isinstance(item.get(k), str) for k in ("quote", "value", "code")):
            raise CourseError(path, field, "needs string fields quote, value and code")
        if item["value"] not in item["quote"]:
            raise CourseError(path, f"{field}.value", f"{item['value']!r} does not appear in the quote")
        digits = item.get("digits")
        numbers.append(CheckedNumber(item["quote"], item["value"], item["code"], digits))

    return Lesson(
        id=lesson_dir.name,
        number=int(match.group(1)),
        dir=lesson_dir,
        title=_text(data, "title", path),
        summary=_text(data, "summary", path, required=False),
        outcomes=tuple(outcomes),
        exercises=tuple(exercises),
        examples=tuple(examples),
        numbers=tuple(numbers),
    )


def load_course(course_dir: Path | None = None) -> Course:
    root = (course_dir or config.course_dir()).resolve()
    path = root / "course.toml"
    data = read_toml(path)
    version = data.get("format_version")
    if version != FORMAT_VERSION:
        raise CourseError(
            path, "format_version", f"is {version!r}; this tritonlab reads format {FORMAT_VERSION}"
        )
    lessons = []
    seen_exercises: dict[str, str] = {}
    for lesson_id in _str_list(data, "lessons", path):
        lesson_dir = root / lesson_id
        if not lesson_dir.is_dir():
            raise CourseError(path, "lessons", f"lists {lesson_id!r} but {lesson_dir} does not exist")
        lesson = load_lesson(lesson_dir)
        for ex in lesson.exercises:
            if ex.id in seen_exercises:
                raise CourseError(
                    lesson_dir / "lesson.toml",
                    "exercises",
                    f"{ex.id!r} is already used by {seen_exercises[ex.id]}",
                )
            seen_exercises[ex.id] = lesson.id
        lessons.append(lesson)
    if not lessons:
        raise CourseError(path, "lessons", "lists no lessons")
    return Course(
        dir=root,
        format_version=version,
        title=_text(data, "title", path),
        welcome=_text(data, "welcome", path, required=False),
        final=_text(data, "final", path, required=False),
        lessons=tuple(lessons),
    )
