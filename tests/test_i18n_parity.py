"""Translation parity: the course and tritonlab's own strings say the same thing in en, pt and es.

Two kinds of test (docs/authoring.md, "Translations"):
- structure, for whatever is translated today: a lesson.pt.md has the English headings (count and levels),
  byte-identical code blocks in the same order, the same figures and links; a quiz.es.toml has the same
  question ids, types, answer keys, outcomes, option and explanation counts, code and answer_code; translated
  hints come in the same number; the UI catalogs have the same ids, placeholders and markup. Drift fails.
- completeness: `test_translations_are_complete` lists everything still missing in pt or es, and fails
  until the course is fully translated (issue 9's "done when").
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tritonlab import i18n
from tritonlab.content.course import load_course
from tritonlab.content.quiz_bank import load_bank, validate_bank
from tritonlab.models import FAILURE_KINDS, Course, Text

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "course"
SRC = ROOT / "src" / "tritonlab"
TRANSLATIONS = ("pt", "es")
LESSON_DIRS = sorted(p for p in COURSE.iterdir() if (p / "lesson.toml").is_file())
_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
_CODE_SPAN = re.compile(r"`([^`]+)`")


# ---- lessons --------------------------------------------------------------------------------------------


def lesson_shape(text: str) -> dict[str, list]:
    """What must match between translations: headings, code blocks, figures, links."""
    shape: dict[str, list] = {"headings": [], "code": [], "figures": [], "links": []}
    tokens = _MD.parse(text)
    for token in tokens:
        if token.type == "heading_open":
            shape["headings"].append(token.tag)
        elif token.type in ("fence", "code_block"):
            shape["code"].append((token.info.strip(), token.content))
        for child in token.children or []:
            if child.type == "image":
                shape["figures"].append(str(child.attrGet("src")))
            elif child.type == "link_open":
                shape["links"].append(str(child.attrGet("href")))
    return shape


def lesson_problems(english: str, translated: str, where: str) -> list[str]:
    en, tr = lesson_shape(english), lesson_shape(translated)
    problems = []
    if en["headings"] != tr["headings"]:
        problems.append(
            f"{where}: headings {' '.join(tr['headings'])} but English has {' '.join(en['headings'])}"
        )
    if len(en["code"]) != len(tr["code"]):
        problems.append(f"{where}: {len(tr['code'])} code blocks, English has {len(en['code'])}")
    for k, (a, b) in enumerate(zip(en["code"], tr["code"], strict=False), 1):
        if a != b:
            first = next((line for line in b[1].splitlines() if line.strip()), "")
            problems.append(
                f"{where}: code block {k} differs from English (```{b[0]}, starting {first!r}); code blocks "
                "are copied byte for byte (translate comments in the prose, not in the code)"
            )
    if en["figures"] != tr["figures"]:
        problems.append(f"{where}: figures {tr['figures']} but English has {en['figures']}")
    if Counter(en["links"]) != Counter(tr["links"]):
        missing = sorted((Counter(en["links"]) - Counter(tr["links"])).elements())
        extra = sorted((Counter(tr["links"]) - Counter(en["links"])).elements())
        problems.append(f"{where}: links differ from English (missing {missing}, extra {extra})")
    return problems


# ---- quizzes ----------------------------------------------------------------------------------------------


def bank_problems(english: Path, translated: Path) -> list[str]:
    problems = validate_bank(translated)
    if problems:
        return problems
    en, tr = load_bank(english), load_bank(translated)
    where = str(translated.relative_to(ROOT) if translated.is_relative_to(ROOT) else translated)
    if en.ids != tr.ids:
        return [f"{where}: question ids {list(tr.ids)} but English has {list(en.ids)} (same ids, same order)"]
    if en.pass_mark != tr.pass_mark:
        problems.append(f"{where}: pass_mark {tr.pass_mark} but English has {en.pass_mark}")
    for a, b in zip(en.questions, tr.questions, strict=True):
        label = f"{where}: question {a.id!r}"
        for name in ("type", "answer", "outcomes", "code", "answer_code", "tolerance", "digits"):
            if getattr(a, name) != getattr(b, name):
                problems.append(f"{label}: `{name}` differs from English ({getattr(b, name)!r})")
        for name in ("options", "explanations"):
            if len(getattr(a, name)) != len(getattr(b, name)):
                problems.append(
                    f"{label}: {len(getattr(b, name))} {name}, English has {len(getattr(a, name))}"
                )
        if bool(a.explanation) != bool(b.explanation):
            problems.append(f"{label}: `explanation` is present in one language only")
        for k, (x, y) in enumerate(zip(a.options, b.options, strict=False)):
            if Counter(_CODE_SPAN.findall(x)) != Counter(_CODE_SPAN.findall(y)):
                problems.append(f"{label}: option {k} has different `code` spans than English ({y!r})")
        if set(_CODE_SPAN.findall(a.prompt)) != set(_CODE_SPAN.findall(b.prompt)):
            problems.append(f"{label}: the prompt has different `code` spans than English")
    return problems


# ---- the course's own texts ------------------------------------------------------------------------------


def course_texts(course: Course) -> list[tuple[str, Text]]:
    """Every translatable text field of the course, named for a report."""
    items: list[tuple[str, Text]] = [("course.toml: title", course.title)]
    if course.welcome:
        items.append(("course.toml: welcome", course.welcome))
    if course.final:
        items.append(("course.toml: final", course.final))
    for lesson in course.lessons:
        where = f"{lesson.id}/lesson.toml"
        items.append((f"{where}: title", lesson.title))
        if lesson.summary:
            items.append((f"{where}: summary", lesson.summary))
        items += [(f"{where}: outcome {o.id}", o.text) for o in lesson.outcomes]
        items += [(f"{where}: example {e.file.name} title", e.title) for e in lesson.examples if e.title]
        for ex in lesson.exercises:
            ex_where = f"{lesson.id}/exercises/{ex.id}/exercise.toml"
            items.append((f"{ex_where}: title", ex.title))
            if ex.summary:
                items.append((f"{ex_where}: summary", ex.summary))
    return items


@pytest.fixture(scope="module")
def course() -> Course:
    return load_course(COURSE)


# ---- structure: whatever is translated must match English --------------------------------------------------


@pytest.mark.parametrize("lesson_dir", LESSON_DIRS, ids=lambda p: p.name)
def test_translated_lessons_have_the_english_structure(lesson_dir: Path) -> None:
    english = (lesson_dir / "lesson.en.md").read_text(encoding="utf-8")
    problems = []
    for lang in TRANSLATIONS:
        path = lesson_dir / f"lesson.{lang}.md"
        if path.is_file():
            problems += lesson_problems(
                english, path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))
            )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lesson_dir", LESSON_DIRS, ids=lambda p: p.name)
def test_translated_quizzes_match_the_english_bank(lesson_dir: Path) -> None:
    english = lesson_dir / "quiz.en.toml"
    problems = []
    for lang in TRANSLATIONS:
        path = lesson_dir / f"quiz.{lang}.toml"
        if path.is_file() and english.is_file():
            problems += bank_problems(english, path)
    assert not problems, "\n".join(problems)


def test_translated_hints_and_texts_match_english(course: Course) -> None:
    problems = []
    for ex in course.exercises():
        where = f"{ex.lesson_id}/exercises/{ex.id}/exercise.toml"
        for lang, hints in ex.hints.items():
            if lang not in ("en", *TRANSLATIONS):
                problems.append(f"{where}: hints in unknown language {lang!r}")
            elif len(hints) != len(ex.hints["en"]):
                problems.append(f"{where}: {len(hints)} hints in `{lang}`, English has {len(ex.hints['en'])}")
    for name, text in course_texts(course):
        for lang in set(text) - {"en", *TRANSLATIONS}:
            problems.append(f"{name}: unknown language {lang!r}")
        for lang in TRANSLATIONS:
            if lang in text and not text[lang].strip():
                problems.append(f"{name}: `{lang}` is empty (leave it out to fall back to English)")
    assert not problems, "\n".join(problems)


# ---- the UI catalogs --------------------------------------------------------------------------------------

_RICH_TAG = re.compile(
    r"\[/?(?:bold|dim|italic|red|green|yellow|cyan)(?: (?:bold|dim|red|green|yellow|cyan))*\]|\[/\]"
)
_HTML_TAG = re.compile(r"</?[a-z]+>")


def _words(template: str) -> list[str]:
    """The words of a message, without placeholders, markup or `code` (left untranslated on purpose)."""
    text = re.sub(r"\{[^{}]*\}|`[^`]*`", " ", _HTML_TAG.sub(" ", _RICH_TAG.sub(" ", template)))
    return re.findall(r"[^\W\d_]{2,}", text)


def test_ui_catalogs_have_the_same_ids_placeholders_and_markup() -> None:
    english = i18n.catalog("en")
    assert english, "src/tritonlab/locales/en.toml is missing or empty"
    problems = []
    for lang in TRANSLATIONS:
        other = i18n.load_catalog(i18n.LOCALES / f"{lang}.toml")
        where = f"src/tritonlab/locales/{lang}.toml"
        problems += [f"{where}: `{key}` is missing" for key in sorted(set(english) - set(other))]
        problems += [f"{where}: `{key}` is not in en.toml" for key in sorted(set(other) - set(english))]
        for key in sorted(set(english) & set(other)):
            a, b = english[key], other[key]
            if not b.strip():
                problems.append(f"{where}: `{key}` is empty")
            if i18n.placeholders(a) != i18n.placeholders(b):
                problems.append(
                    f"{where}: `{key}` has placeholders {i18n.placeholders(b)}, "
                    f"English has {i18n.placeholders(a)}"
                )
            for pattern, what in ((_RICH_TAG, "rich markup"), (_HTML_TAG, "HTML tags")):
                if Counter(pattern.findall(a)) != Counter(pattern.findall(b)):
                    problems.append(
                        f"{where}: `{key}` has {what} {pattern.findall(b)}, English has {pattern.findall(a)}"
                    )
            if (a[:1].isspace(), a[-1:].isspace()) != (b[:1].isspace(), b[-1:].isspace()):
                problems.append(
                    f"{where}: `{key}` starts or ends with a space where English does not, "
                    "or the other way round"
                )
            if a == b and len(_words(a)) >= 4:
                problems.append(f"{where}: `{key}` is still the English sentence {a!r}")
    assert not problems, "\n".join(problems)


def test_every_message_id_used_in_the_code_exists() -> None:
    """A literal message id in Python, a template or a script must be in en.toml (dynamic ids excluded)."""
    english = i18n.catalog("en")
    sections = sorted({key.split(".", 1)[0] for key in english})
    literal = re.compile(r"""["']((?:""" + "|".join(sections) + r""")\.[A-Za-z0-9_.-]*[A-Za-z0-9])["']""")
    problems = []
    files = [
        *SRC.rglob("*.py"),
        *(SRC / "web" / "templates").glob("*.html"),
        *(SRC / "web" / "static").glob("*.js"),
    ]
    for path in files:
        if "vendor" in path.parts:
            continue
        for match in literal.finditer(path.read_text(encoding="utf-8")):
            key = match.group(1)
            if key.endswith((".toml", ".py", ".md", ".js", ".html", ".css", ".png")):
                continue  # a file name, not a message id
            if key not in english and not any(k.startswith(key + ".") for k in english):
                line = path.read_text(encoding="utf-8")[: match.start()].count("\n") + 1
                problems.append(f"{path.relative_to(ROOT)}:{line}: no message {key!r} in en.toml")
    assert not problems, "\n".join(problems)


def test_every_failure_kind_has_a_name() -> None:
    english = i18n.catalog("en")
    assert [k for k in FAILURE_KINDS if f"kind.{k}" not in english] == []
    assert all(english[f"kind.{k}"] == k for k in FAILURE_KINDS), "in English a kind's label is its id"


def test_known_english_messages_are_translated() -> None:
    """Messages built outside the UI layer (doctor, backend, quiz input) are re-rendered from [doctor_text],
    [backend_reason] and [quiz_error]; when their source changes, add or update the template there."""
    from tritonlab.cli import doctor
    from tritonlab.content.quiz import QuizInputError, parse_response
    from tritonlab.content.quiz_bank import Question
    from tritonlab.runs import backend, jailprobe

    untranslated = []
    for layer in [*doctor.LAYER_ONE, doctor.RUN_PID_NAMESPACE, *(t for _ok, t in jailprobe.between_runs({}))]:
        for lang in TRANSLATIONS:
            if i18n.translate_known("doctor_text", layer, lang) == layer:
                untranslated.append(f"doctor.LAYER_ONE {layer!r} ({lang})")
    reason = backend.choose("interpreter").reason
    single = Question("q", "single", "?", ("1.1",), 1, options=("a", "b", "c"), explanations=("", "", ""))
    numeric = Question("n", "numeric", "?", ("1.1",), 3.0)
    messages = [("backend_reason", reason)]
    for question, raw in (
        (single, "7"),
        (single, "z"),
        (single, "?"),
        (single, "1,2"),
        (numeric, "x"),
        (numeric, "inf"),
        (single, " "),
    ):
        with pytest.raises(QuizInputError) as info:
            parse_response(question, raw)
        messages.append(("quiz_error", str(info.value)))
    for section, text in messages:
        for lang in TRANSLATIONS:
            if i18n.translate_known(section, text, lang) == text:
                untranslated.append(f"[{section}] {text!r} ({lang})")
    assert not untranslated, "no template matches these English messages:\n" + "\n".join(untranslated)


# ---- the checker itself: drift is caught ----------------------------------------------------------------


def test_the_parity_checker_catches_drift(tmp_path: Path) -> None:
    english = "# T\n\n## A\n\n![f](figures/a.png)\n\n```python\nx = 1\n```\n\nSee [docs](https://x.y).\n"
    good = (
        "# T pt\n\n## A pt\n\n![f pt](figures/a.png)\n\n```python\nx = 1\n```\n\nVeja [docs](https://x.y).\n"
    )
    assert lesson_problems(english, good, "pt") == []
    drift = good.replace("x = 1", "x = 2").replace("## A pt", "### A pt").replace("a.png", "b.png")
    found = "\n".join(lesson_problems(english, drift.replace("https://x.y", "https://z"), "pt"))
    for words in ("headings", "code block 1", "figures", "links"):
        assert words in found
    bank = (
        'pass_mark = 0.8\n\n[[questions]]\nid = "q"\ntype = "single"\noutcomes = ["1.1"]\n'
        'prompt = "Why `x`?"\n'
        'options = ["`a`", "b"]\nanswer = 1\nexplanations = ["no", "yes"]\n'
    )
    (tmp_path / "quiz.en.toml").write_text(bank)
    (tmp_path / "quiz.pt.toml").write_text(bank.replace("Why", "Por que").replace('"no"', '"não"'))
    assert bank_problems(tmp_path / "quiz.en.toml", tmp_path / "quiz.pt.toml") == []
    (tmp_path / "quiz.es.toml").write_text(bank.replace("answer = 1", "answer = 0").replace("`a`", "a"))
    found = "\n".join(bank_problems(tmp_path / "quiz.en.toml", tmp_path / "quiz.es.toml"))
    assert "`answer` differs" in found and "option 0 has different `code` spans" in found


# ---- completeness: issue 9 is done when this passes ------------------------------------------------------


def missing_translations(course: Course) -> list[str]:
    missing = []
    for lesson in course.lessons:
        for lang in TRANSLATIONS:
            if not (lesson.dir / f"lesson.{lang}.md").is_file():
                missing.append(f"{lesson.id}/lesson.{lang}.md")
            if (lesson.dir / "quiz.en.toml").is_file() and not (lesson.dir / f"quiz.{lang}.toml").is_file():
                missing.append(f"{lesson.id}/quiz.{lang}.toml")
        for ex in lesson.exercises:
            absent = [lang for lang in TRANSLATIONS if not ex.hints.get(lang)]
            if absent:
                missing.append(f"{lesson.id}/exercises/{ex.id}/exercise.toml: hints.{'/'.join(absent)}")
    for name, text in course_texts(course):
        absent = [lang for lang in TRANSLATIONS if not text.get(lang, "").strip()]
        if absent:
            missing.append(f"{name}.{'/'.join(absent)}")
    for lang in TRANSLATIONS:
        if not (i18n.LOCALES / f"{lang}.toml").is_file():
            missing.append(f"src/tritonlab/locales/{lang}.toml")
    return missing


def test_translations_are_complete(course: Course) -> None:
    """Fails until every lesson, quiz, hint and title exists in pt and es (deselect with
    `-k "not complete"` while translations are being written)."""
    missing = missing_translations(course)
    assert not missing, f"{len(missing)} translation(s) missing:\n" + "\n".join(missing)


def grader_failures() -> list:
    """Real failures and notes, built by the grader's own code paths from results a wrong kernel gives."""
    import numpy as np

    from tritonlab.grading import contracts
    from tritonlab.grading.check import judge
    from tritonlab.grading.check.host import cost_notes, judge_host
    from tritonlab.grading.contracts import Case, Tensor
    from tritonlab.grading.contracts._values import unwritten_cause
    from tritonlab.grading.contracts.compare import compare_values, host_checks

    case = Case("n=100", (Tensor(np.ones(100), "float32"),))
    base = {"status": "returned", "function": "vector_add", "returned": "NoneType"}
    failures = host_checks(
        case,
        base
        | {
            "guard_violations": [{"label": "output #1", "numel": 100, "after": [100, 101], "before": []}],
            "inputs_modified": ["input `x`"],
            "torch_ops": ["compute:aten.add"],
            "launches": [],
        },
        allow_copies=False,
        needs_launch=True,
    )
    failures += host_checks(
        case,
        base
        | {
            "guard_violations": [{"label": "output #1", "numel": 100, "after": [150], "before": [-3]}],
            "launches": [{"kernel": "k", "grid": [1]}] * 3,
        },
        allow_copies=True,
        needs_launch=True,
        max_launches=1,
    )
    expected = np.arange(100.0)

    def outputs(values: np.ndarray, dtype: str = "float32", shape: tuple = (100,)) -> dict:
        raw = contracts.to_storage(np.asarray(values, dtype=np.float64), dtype)
        meta = {"file": "o.npy", "dtype": dtype, "shape": list(shape), "guarded": True}
        launch = {"kernel": "k", "grid": [6], "constexprs": {"BLOCK": 16}}
        return base | {"outputs": [meta], "arrays": [raw], "launches": [launch]}

    compare = lambda result: compare_values(case, result, expected, "float32", 1e-6, 1e-6)  # noqa: E731
    failures += compare(base | {"outputs": []})
    failures += compare(outputs(expected, shape=(10, 10)))
    failures += compare(outputs(expected, "float16"))
    off = expected.copy()
    off[3] += 1
    failures += compare(outputs(off))
    off[5] = np.nan
    failures += compare(outputs(off))
    unwritten = outputs(expected)
    unwritten["arrays"][0].view(np.uint32)[96:] = 0x7FA5A5A5  # the poison of a never-written float32
    failures += compare(unwritten)
    guard = outputs(expected)
    guard["arrays"][0].view(np.uint32)[7] = 0x7FC0BAD0  # the input guard: read out of bounds
    failures += compare(guard)
    failures += compare_values(case, outputs(off), expected, "float32", 1e-6, 1e-6, nan_is_oob_read=True)
    causes = [
        unwritten_cause(np.arange(96, 100), 100, 16, {"launches": [{"grid": [6]}]})[0],
        unwritten_cause(np.arange(0, 100), 100, 16, {"launches": [{"grid": [0]}]})[0],
        unwritten_cause(np.arange(16, 100), 100, 16, {"launches": [{"grid": [7]}]})[0],
        unwritten_cause(np.arange(22, 100), 100, 16, {"launches": [{"grid": [7]}]})[0],
        unwritten_cause(np.arange(40, 60), 100, 16, {"launches": [{"grid": [7]}]})[0],
    ]
    entry = {
        "outputs": [{"shape": [100], "dtype": "float32"}],
        "host_copies": [
            {"arg": "x", "op": "aten._to_copy", "convert": True, "where": "f.py:3"},
            {"arg": "y", "op": "aten.clone", "convert": False, "bytes": 400, "where": "f.py:4"},
            {"arg": "z", "op": "aten.clone", "convert": False, "bytes": 400},
        ],
        "host_computed": "output 0: 3 of 100 element(s) differ when the launches run alone",
    }
    costs: dict = {}
    failures += judge_host(case, entry, {"layout_copies": ["z"]}, costs)
    failures += [judge.no_launch(case), judge.not_run(case)]  # what the child's own reports no longer decide
    texts = [t for f in failures for t in (f.message, f.cause) if t] + causes + cost_notes(costs)
    return texts


def test_grader_messages_and_causes_are_translated() -> None:
    """Every message and likely cause the grader built above matches a [grader] template, so the web page and
    the CLI show it in pt and es; when a message changes in the grader, its template must change with it."""
    texts = grader_failures()
    assert len(texts) >= 30
    untranslated = []
    for text in texts:
        for lang in TRANSLATIONS:
            translated, in_lang = i18n.translate_grader(text, lang)
            if in_lang != lang or translated == text:
                untranslated.append(f"{text!r} ({lang})")
    assert not untranslated, "no [grader] template matches these messages:\n" + "\n".join(untranslated)


def test_classroom_templates_and_scripts_use_only_catalog_keys_present_in_every_language() -> None:
    """Every key the classroom pages (log-in, join, teacher, roster, code, leaderboard) and their scripts look
    up exists, with the same placeholders, in en, pt and es, and pt/es say it in their own words."""
    templates = sorted((SRC / "web" / "templates").glob("classroom_*.html"))
    used = set()
    for path in templates:
        used |= {k for k in re.findall(r"""t(?:_html)?\('([a-z_.]+)'""", path.read_text()) if k[-1] != "_"}
        used |= {
            f"classroom_ui.teacher.role_{r}" for r in ("learner", "teacher")
        }  # built as 'role_' ~ u.role
    for script in ("classroom.js", "classroom-teacher.js"):
        text = (SRC / "web" / "static" / script).read_text()
        used |= {f"js.classroom.{k}" for k in re.findall(r"""\btr\("([a-z_]+)\"""", text) if k[-1] != "_"}
    used |= {f"js.classroom.role_{r}" for r in ("learner", "teacher")}  # tr("role_" + me.role)
    assert len(used) >= 60, sorted(used)
    english = i18n.catalog("en")
    for lang in TRANSLATIONS:
        mine = i18n.catalog(lang)
        missing = sorted(k for k in used if k not in mine or k not in english)
        assert not missing, (lang, missing)
        for key in used:
            assert i18n.placeholders(mine[key]) == i18n.placeholders(english[key]), (lang, key)
        same = [k for k in used if mine[k] == english[k] and english[k] not in ("#", "{ms} ms", "GPU")]
        assert not same, (lang, same)


def test_the_classrooms_english_messages_are_translated(tmp_path: Path) -> None:
    """Every message the classroom builds in English (classroom/, store/: refused log-ins, account and
    leaderboard-name errors, the join link) is produced here by the real code, and each is re-rendered in pt
    and es by the web layer's [classroom_text] templates (i18n.translate_known); every template is used."""
    from tritonlab.classroom.auth import LoginRefused
    from tritonlab.classroom.room import AccountError, Classroom, check_username

    room = Classroom(f"sqlite:///{tmp_path / 'class.db'}", adopt=tmp_path / "none.db")
    try:
        code = room.init("Class")["join_path"].rsplit("/", 1)[1]
        anna, password = room.add("anna")
        room.set_leaderboard_name(anna, "Anna")
        bob = room.add("bob")[0]
        said: list[str] = []

        def refused(action) -> None:  # noqa: ANN001
            with pytest.raises((AccountError, LoginRefused, LookupError, PermissionError)) as info:
                action()
            said.append(str(info.value))

        refused(lambda: check_username("A!"))
        refused(lambda: room.add("carl", role="boss"))
        refused(lambda: room.add("carl", password="short"))
        refused(lambda: room.add("anna"))
        refused(lambda: room.user("nobody"))
        refused(lambda: room.auth.authenticate("anna", "not-her-password", "10.0.0.1"))
        for _ in range(5):  # the back-off: the next try waits
            with pytest.raises(LoginRefused):
                room.auth.authenticate("anna", "not-her-password", "10.0.0.2")
        refused(lambda: room.auth.authenticate("anna", password, "10.0.0.2"))
        room.set_disabled(anna, True)
        refused(lambda: room.auth.authenticate("anna", password, "10.0.0.3"))
        refused(lambda: room.join("not-the-code", "dora", "", "long-enough-1"))
        room.set_join_open(False)
        refused(lambda: room.join(code, "dora", "", "long-enough-1"))
        refused(lambda: room.set_leaderboard_name(bob, "x" * 41))
        refused(lambda: room.set_leaderboard_name(bob, "A\u200bB"))
        refused(lambda: room.set_leaderboard_name(bob, "anna"))
    finally:
        room.close()
    used = set()
    for text in said:
        for lang in TRANSLATIONS:
            translated = i18n.translate_known("classroom_text", text, lang)
            assert translated != text, f"no [classroom_text] template matches {text!r} ({lang})"
        used |= {key for key, pattern in i18n._patterns("classroom_text") if pattern.match(text)}
    assert used == {k for k in i18n.catalog("en") if k.startswith("classroom_text.")}
