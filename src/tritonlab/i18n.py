"""The CLI's and the web page's own strings, in English, Portuguese and Spanish.

Course content (lessons, quizzes, hints, titles) lives in course/ and is picked by `models.pick` and the
`Lesson.*_path` helpers; this module holds only tritonlab's own words.

Catalogs are TOML files, one per language: `src/tritonlab/locales/<lang>.toml`. Tables nest into dotted,
stable message ids (`[cli.verdict] likely_cause = "..."` is `cli.verdict.likely_cause`); values are
`str.format` templates with named `{placeholders}` (a literal brace is doubled: `{{`). English is the
complete reference; a message missing from another catalog falls back to English. Some messages carry rich
markup (`[bold]...[/]`, CLI) or a little trusted HTML (`<code>`, web); translations keep the same tags, and
`tests/test_i18n_parity.py` checks that every catalog has the same ids, placeholders and tags.

Lookups:
- `t(key, lang, **fmt)`: one message, formatted.
- `translate_known(section, text, lang)`: an English message produced elsewhere (the doctor's report,
  backend reasons, quiz input errors), matched against the English templates of `section` and re-rendered in
  `lang`; unknown messages come back unchanged, in English.
- `js_strings(lang)`: the messages the web page's JavaScript needs, for a JSON blob in the page.

Importing this module is cheap (a catalog is parsed on its first lookup): `tritonlab --help` stays fast.
"""

from __future__ import annotations

import functools
import re
import string
from pathlib import Path
from typing import Any

from tritonlab.config import LANGUAGES

LOCALES = Path(__file__).resolve().parent / "locales"
REFERENCE = "en"
JS_PREFIXES = ("js.", "kind.", "web.backend.")  # what the browser's scripts look up with TL.t(key)
_FORMATTER = string.Formatter()


class CatalogError(Exception):
    """A broken catalog file: names the file and the problem."""


def _flatten(data: dict[str, Any], prefix: str, out: dict[str, str], path: Path) -> None:
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _flatten(value, name + ".", out, path)
        elif isinstance(value, str):
            out[name] = value
        else:
            raise CatalogError(f"{path}: `{name}` must be text or a table, not {type(value).__name__}")


def load_catalog(path: Path) -> dict[str, str]:
    """A catalog file as {message id: template}."""
    import tomllib  # only when a message is first looked up: `tritonlab --help` never parses a catalog

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: cannot be read: {exc}") from None
    out: dict[str, str] = {}
    _flatten(data, "", out, path)
    return out


@functools.cache
def catalog(lang: str) -> dict[str, str]:
    """The messages of `lang` ({} for a language without a catalog)."""
    path = LOCALES / f"{lang}.toml"
    return load_catalog(path) if path.is_file() else {}


def normalize(lang: str | None) -> str:
    code = (lang or "").strip().lower()[:2]
    return code if code in LANGUAGES else REFERENCE


def template(key: str, lang: str | None) -> str:
    """The raw template of `key` in `lang`, else in English; a key English lacks is a programming error."""
    text = catalog(normalize(lang)).get(key)
    if text is None:
        text = catalog(REFERENCE).get(key)
    if text is None:
        raise KeyError(f"no message {key!r} in {LOCALES / (REFERENCE + '.toml')}")
    return text


def t(key: str, lang: str | None = None, /, **fmt: Any) -> str:
    """The message `key` in `lang` (English when that language lacks it), with `fmt` filled in."""
    return template(key, lang).format(**fmt)


def placeholders(text: str) -> list[str]:
    """The replacement fields of a template, as written (`name`, `name!r`, `name:.0%`), sorted."""
    fields = []
    for _, name, spec, conversion in _FORMATTER.parse(text):
        if name is not None:
            fields.append(name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else ""))
    return sorted(fields)


def language_name(code: str, lang: str | None) -> str:
    """The name of language `code`, in `lang` ("português", "Portuguese", "portugués")."""
    return t(f"language.{code}", lang)


def kind_label(kind: str, lang: str | None) -> str:
    """A failure kind for people: in English the id itself (`wrong-result`), elsewhere the translated name
    followed by the id, which stays searchable (`resultado incorreto (wrong-result)`)."""
    key = f"kind.{kind}"
    if key not in catalog(REFERENCE):
        return kind
    name = t(key, lang)
    return name if name == kind else f"{name} ({kind})"


def js_strings(lang: str | None) -> dict[str, str]:
    """The raw templates the browser's scripts use (keys under JS_PREFIXES), in `lang` with English filling
    gaps. The scripts fill `{placeholders}` themselves (TL.t in static/common.js)."""
    return {key: template(key, lang) for key in catalog(REFERENCE) if key.startswith(JS_PREFIXES)}


@functools.cache
def _patterns(section: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The English templates under `section`, as anchored regular expressions, the most specific first: most
    literal text, then longest (`returned {a}, expected {b}` must not take a text that `returned shape {s},
    expected [{n}]` wrote, although its raw template is longer)."""
    found = []
    prefix = section + "."
    for key, text in catalog(REFERENCE).items():
        if not key.startswith(prefix):
            continue
        regex, names, literal_chars = "", set(), 0
        for literal, name, _, _ in _FORMATTER.parse(text):
            regex += re.escape(literal)
            literal_chars += len(literal.strip())
            if name is None:
                continue
            if name in names:
                regex += f"(?P={name})"
            else:
                names.add(name)
                regex += f"(?P<{name}>.+?)"
        if literal_chars:  # a bare "{x}" would match anything
            found.append((key, re.compile(regex + r"\Z", re.DOTALL), (literal_chars, len(text))))
    found.sort(key=lambda item: (-item[2][0], -item[2][1]))
    return tuple((key, pattern) for key, pattern, _ in found)


MAX_SPLITS = 2000  # the ways a text may be cut at a template's literal parts, beyond which it is not tried
MAX_TEXT = 4000  # longer text is left as it is (a grader message with its shown elements is under 2,000)
MAX_DEPTH = 3  # messages inside messages: a host-computed reason naming a launch argument is 2 deep


@functools.cache
def _literals(section: str) -> dict[str, tuple[str, ...]]:
    """The literal parts between a template's placeholders (after the first placeholder), per key."""
    out = {}
    for key, text in catalog(REFERENCE).items():
        if key.startswith(section + "."):
            parts = [literal for literal, _, _, _ in _FORMATTER.parse(text)]
            out[key] = tuple(parts[1:])
    return out


def _occurrences(needle: str, text: str) -> int:
    if not needle:
        return len(text)  # two placeholders side by side: any cut
    count, at = 0, text.find(needle)
    while at >= 0:
        count, at = count + 1, text.find(needle, at + 1)
    return count


def _too_ambiguous(literals: tuple[str, ...], text: str) -> bool:
    """Whether `text` could be cut in more than MAX_SPLITS ways at the literal parts of a template: the
    regular expression's backtracking over that many cuts is what a hostile text (an exception message a
    learner wrote, repeating a template's words) would make take seconds or hours. A real message holds each
    literal part once or a few times."""
    splits = 1
    for literal in literals:
        splits *= max(_occurrences(literal, text), 1)
        if splits > MAX_SPLITS:
            return True
    return False


def translate_known(section: str, text: str, lang: str | None, _depth: int = 0) -> str:
    """`text`, an English message built elsewhere from one of the templates under `section`, re-rendered
    in `lang`. Values that are themselves known messages are translated too. Unknown text is returned as is
    (English): the message was changed or added at its source without a catalog entry yet. A template whose
    literal parts the text repeats too often is not tried (`_too_ambiguous`), and text longer than MAX_TEXT or
    nested deeper than MAX_DEPTH stays English: the text may hold what a learner wrote (an exception's
    message), and its translation must not cost more than a moment."""
    if normalize(lang) == REFERENCE or not text or len(text) > MAX_TEXT or _depth > MAX_DEPTH:
        return text
    literals = _literals(section)
    for key, pattern in _patterns(section):
        if _too_ambiguous(literals.get(key, ()), text):
            continue
        match = pattern.match(text)
        if match:
            values = {
                name: translate_known(section, value, lang, _depth + 1)
                for name, value in match.groupdict().items()
            }
            return t(key, lang, **values)
    return text


GRADER = "grader"  # the catalog section holding the grader's messages and likely causes (issue 16)


def translate_grader(text: str, lang: str | None) -> tuple[str, str]:
    """A grader message or likely cause in `lang` when the catalog knows its template: (text, its language)."""
    done = translate_known(GRADER, text, lang)
    return done, (normalize(lang) if done != text or normalize(lang) == REFERENCE else REFERENCE)


def translate_verdict(data: dict, lang: str | None) -> dict:
    """A verdict's JSON with every failure message, likely cause and note the catalog knows in `lang`; each
    text says its language (`message_lang`, `cause_lang`, `notes_lang`), so the page marks English that is
    left (a message added to the grader without a catalog entry yet)."""
    failures = []
    for f in data.get("failures", []):
        f = dict(f)
        f["message"], f["message_lang"] = translate_grader(f.get("message", ""), lang)
        if f.get("cause"):
            f["cause"], f["cause_lang"] = translate_grader(f["cause"], lang)
        failures.append(f)
    notes = [translate_grader(n, lang) for n in data.get("notes", [])]
    return data | {
        "failures": failures,
        "notes": [n for n, _ in notes],
        "notes_lang": [k for _, k in notes],
    }
