"""The grader's messages in English, Portuguese and Spanish (issue 33).

Every message and likely cause a check can give is a `[grader]` template of the catalogs, rendered in English by
the grader (`t("grader.KEY", ...)` in grading/) and re-rendered in the learner's language by the interfaces
(`i18n.translate_grader`: the CLI, the web page's verdict JSON, the notebook). What is held here:
- the keys come from the code (every `t("grader.…")` call in grading/, read with `ast`), each in en, pt and es
  with the placeholders the call passes, pt and es in their own words;
- no message is left as a literal in a `Failure`, a replay refusal or a host-computed reason;
- every template, rendered in English, is recognised and re-rendered in pt and es (no other template takes it);
- a real check on the interpreter of a host-computed file gives its explanation in pt and es, through the
  verdict JSON the web page reads, the notebook's HTML and the CLI.
"""

from __future__ import annotations

import ast
import html
import os
import re
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonlab import i18n
from tritonlab.grading import contracts
from tritonlab.grading.check import pipeline
from tritonlab.models import Exercise
from tritonlab.runs import sandbox

ROOT = Path(__file__).resolve().parent.parent
GRADING = ROOT / "src" / "tritonlab" / "grading"
WRONG = ROOT / "tests" / "wrong"
LANGS = ("en", "pt", "es")
TRANSLATIONS = ("pt", "es")


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{node.lineno}"


def message_calls() -> tuple[dict[str, list[tuple[str, set[str]]]], list[str]]:
    """Every call of `t`/`i18n.t` in grading/: {key: [(where, keyword names passed)]}, and the calls whose key
    is not a literal `"grader.…"` string (which this enumeration could not see)."""
    used: dict[str, list[tuple[str, set[str]]]] = {}
    dynamic = []
    for path in sorted(GRADING.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if name != "t":
                continue
            first = node.args[0] if node.args else None
            if (
                isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and first.value.startswith("grader.")
                and all(k.arg for k in node.keywords)  # no **kwargs: the names passed are the names read
            ):
                used.setdefault(first.value, []).append(
                    (_where(path, node), {str(k.arg) for k in node.keywords})
                )
            else:
                dynamic.append(_where(path, node))
    return used, dynamic


def _has_words(node: ast.AST | None) -> bool:
    """A string literal, or an f-string, with words in its literal text: a message written in place."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(re.search(r"[A-Za-z]{2}", node.value))
    if isinstance(node, ast.JoinedStr):
        return any(_has_words(v) for v in node.values if isinstance(v, ast.Constant))
    return False


def literal_messages() -> list[str]:
    """Messages of the grader written as literals: a `Failure`'s message or cause, a replay's `Refused(...)`,
    a host-computed reason assigned to a case's entry."""
    found = []
    for path in sorted(GRADING.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            texts: list[ast.AST] = []
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name == "Failure":
                    texts = node.args[2:4] + [k.value for k in node.keywords if k.arg in ("message", "cause")]
                elif name == "Refused":
                    texts = node.args[:1]
            elif isinstance(node, ast.Assign):
                if any(
                    isinstance(target, ast.Subscript)
                    and isinstance(target.slice, ast.Constant)
                    and target.slice.value == "host_computed"
                    for target in node.targets
                ):
                    texts = [node.value]
            found += [_where(path, text) for text in texts if _has_words(text)]
    return found


def test_every_message_key_of_the_grader_is_in_every_catalog_with_its_placeholders() -> None:
    used, dynamic = message_calls()
    assert len(used) >= 300, f"only {len(used)} grader message keys found in grading/: is the scan broken?"
    assert not dynamic, 'grader messages must be looked up by a literal key (`t("grader.KEY", ...)`): ' + (
        ", ".join(dynamic)
    )
    catalogs = {lang: i18n.load_catalog(i18n.LOCALES / f"{lang}.toml") for lang in LANGS}  # no fallback
    problems = []
    for key, calls in sorted(used.items()):
        short = key.removeprefix("grader.")
        missing = [lang for lang in LANGS if key not in catalogs[lang]]
        if missing:
            problems.append(f"{key}: missing in {', '.join(f'locales/{lang}.toml' for lang in missing)}")
            continue
        english = _fields(catalogs["en"][key])
        for where, passed in calls:
            if passed != english:
                problems.append(
                    f"{where}: {short} is given {sorted(passed)}, its template reads {sorted(english)}"
                )
        for lang in TRANSLATIONS:
            text = catalogs[lang][key]
            if _fields(text) != english:
                problems.append(
                    f"locales/{lang}.toml: {short} has {sorted(_fields(text))}, en {sorted(english)}"
                )
            if text == catalogs["en"][key]:
                problems.append(f"locales/{lang}.toml: {short} is still the English text")
    assert not problems, "\n".join(problems)


def test_no_grader_message_is_left_as_a_literal() -> None:
    """A message written in place (an f-string in a Failure, a refusal, a host-computed reason) would reach a
    Portuguese or Spanish learner in English: it must be a catalog key like the others."""
    found = literal_messages()
    assert not found, 'write these as t("grader.KEY", ...) with the key in en/pt/es.toml:\n' + "\n".join(
        found
    )


def test_every_grader_template_is_recognised_and_rendered_in_pt_and_es() -> None:
    """Each template, rendered in English as the grader renders it, comes back in pt and es: the text matches
    its own template (or one with the same English), not a shorter or looser one."""
    used, _ = message_calls()
    english = i18n.catalog("en")
    same_english: dict[str, list[str]] = {}
    for key in english:
        if key.startswith(i18n.GRADER + "."):
            same_english.setdefault(english[key], []).append(key)
    problems = []
    for key in sorted(used):
        values = {name: f"V{k}q" for k, name in enumerate(sorted(_fields(english[key])))}
        text = i18n.t(key, "en", **values)
        for lang in TRANSLATIONS:
            done, in_lang = i18n.translate_grader(text, lang)
            wanted = {i18n.t(other, lang, **values) for other in same_english[english[key]]}
            if in_lang != lang or done not in wanted:
                problems.append(f"{key} ({lang}): {text!r} came back as {done!r}")
    assert not problems, "\n".join(problems)


def test_a_hostile_message_cannot_stall_the_translation() -> None:
    """A verdict's text may hold what a learner wrote (an exception's message, up to 2,000 characters and more on
    one line): one that repeats a template's own words must not make the regular expressions backtrack for
    seconds in the web server's request (before the cut limit, one such text took 22 s), nor recurse without
    end."""
    import time

    english = i18n.catalog("en")
    slowest = (0.0, "")
    for size in (2000, 100_000):
        for key, template in english.items():
            if not key.startswith(i18n.GRADER + "."):
                continue
            words = "".join(literal for literal, _, _, _ in string.Formatter().parse(template)) or "x"
            text = (words * (size // len(words) + 1))[:size] + "\u0000"
            started = time.perf_counter()
            i18n.translate_grader(f"ValueError: {text}", "pt")  # may match a template: it only has to end
            slowest = max(slowest, (time.perf_counter() - started, key))
    assert slowest[0] < 1.0, f"translating a text built from {slowest[1]} took {slowest[0]:.2f} s"


# ---- a real check, in Portuguese and Spanish ----------------------------------------------------------------

HOST_NUMPY = WRONG / "vector_add" / "host_numpy.py"
REASON = re.compile(r"output (\d+): (\d+) of (\d+) element\(s\) differ when the launches run alone")


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        z = sandbox.Zygote("interpreter")
        z.wait_ready()
        yield z
        z.close()


def expected_host_computed(message: str, lang: str) -> str:
    """The host-computed message of vector_add/host_numpy.py in `lang`, built from that language's own catalog
    (no English fallback: a key missing from it fails here)."""
    found = REASON.search(message)
    assert found, message
    index, count, total = found.groups()
    own = i18n.load_catalog(i18n.LOCALES / f"{lang}.toml")
    reason = own["grader.replay_differs"].format(index=index, count=count, total=total)
    return own["grader.host_computed"].format(reason=reason)


def test_a_host_computed_check_explains_itself_in_portuguese_and_spanish(zygote: sandbox.Zygote) -> None:
    from tritonlab.notebook.render import verdict_html

    exercise = Exercise(
        "vector-add", "", WRONG / "vector_add", contracts.get("vector-add").FUNCTION, {}, {}, {}, ()
    )
    verdict = pipeline.check(exercise, HOST_NUMPY, "interpreter", zygote, seed=11, timeout=60)
    failures = [f for f in verdict.failures if f.kind == "host-computed"]
    assert failures and not verdict.passed, [f.to_json() for f in verdict.failures]
    english = failures[0]
    assert english.message == expected_host_computed(english.message, "en")  # the English is unchanged
    assert english.cause == i18n.t("grader.host_computed_cause")
    for lang in TRANSLATIONS:
        data = i18n.translate_verdict(verdict.to_json(), lang)  # what the web page's verdict shows
        shown = next(f for f in data["failures"] if f["kind"] == "host-computed")
        assert shown["case"] == english.case and shown["kind"] == "host-computed"  # machine fields unchanged
        assert shown["message"] == expected_host_computed(english.message, lang) != english.message
        assert shown["cause"] == i18n.t("grader.host_computed_cause", lang) != english.cause
        assert shown["message_lang"] == shown["cause_lang"] == lang
        page = verdict_html(verdict, lang=lang)  # the notebook
        assert html.escape(shown["message"]) in page and html.escape(shown["cause"]) in page
        assert html.escape(i18n.t("js.verdict.english_details", lang)) not in page
        assert english.message not in page


def test_the_cli_check_explains_a_host_computed_file_in_spanish(home: Path) -> None:
    """`tritonlab --lang es check` on the same file, in a process of its own."""
    env = {
        **os.environ,
        "TRITONLAB_LANG": "",
        "LANG": "C.UTF-8",
        "COLUMNS": "2000",
        "TRITONLAB_DAEMON": "0",
    }
    args = ["--lang", "es", "check", "vector-add", "--file", str(HOST_NUMPY), "--backend", "interpreter"]
    done = subprocess.run(
        [sys.executable, "-m", "tritonlab", *args, "--seed", "11"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    prefix = i18n.t("grader.host_computed", "es", reason="").split("(")[0].strip()
    assert prefix in out and i18n.t("grader.host_computed_cause", "es") in out, out
    assert (
        "launches alone do not produce" not in out and i18n.t("cli.verdict.english_details", "es") not in out
    )
