"""Fuzz the content loader: any course.toml / lesson.toml / exercise.toml content is a CourseError naming the
file (and the field, when one is at fault), never another exception."""

from __future__ import annotations

import shutil
import tempfile
import tomllib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tritonlab.content.course import CourseError, load_course

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "course"
FILES = ("course.toml", "01-only/lesson.toml", "01-only/exercises/vector-copy/exercise.toml")

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=8), st.floats(allow_nan=False)
)
keys = st.sampled_from(
    [
        "format_version",
        "lessons",
        "title",
        "en",
        "exercises",
        "function",
        "hints",
        "outcomes",
        "id",
        "section",
        "text",
        "examples",
        "file",
        "numbers",
        "quote",
        "value",
        "code",
        "summary",
    ]
)


def toml_value(value: object) -> str:
    if value is None:
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return repr(value)


tables = st.dictionaries(keys, st.one_of(scalars, st.lists(scalars, max_size=3)), max_size=6)
documents = st.one_of(
    tables.map(lambda d: "\n".join(f"{k} = {toml_value(v)}" for k, v in d.items())),
    st.text(max_size=200),
    st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from(FILES), content=documents, raw=st.binary(max_size=40), use_raw=st.booleans())
def test_malformed_course_files_raise_course_error(
    which: str, content: str, raw: bytes, use_raw: bool
) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        course = root / "course"
        shutil.copytree(FIXTURE, course)
        target = course / which
        if use_raw:
            target.write_bytes(raw)
        else:
            target.write_text(content, encoding="utf-8")
        try:
            load_course(course)
        except CourseError as exc:
            assert str(exc.path).startswith(str(course)) and str(course) in str(exc)
        else:  # accepted: then the file really was UTF-8 TOML (a loader that swallows parse errors fails here)
            data = target.read_bytes()
            try:
                tomllib.loads(data.decode("utf-8"))
            except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise AssertionError(f"{which} is not valid TOML ({exc}) yet the course loaded") from None
    finally:
        shutil.rmtree(root)
