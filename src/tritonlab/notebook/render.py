"""HTML for a notebook: verdicts, hints, messages (bench tables: `speed.py`). Pure functions, no IPython.

Everything that comes from the learner (their code, what it printed, messages naming their values) or from a
run goes through `html.escape`; the only markup is the one written here.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tritonlab.i18n import kind_label, normalize, t, translate_grader

if TYPE_CHECKING:
    from tritonlab.models import Failure, Verdict
    from tritonlab.notebook.session import Source

MAX_GROUPS = 6
BOX = "font-family:system-ui,sans-serif;border-left:4px solid {colour};padding:6px 10px;margin:4px 0"
GREEN, RED, GREY, AMBER = "#2e7d32", "#c62828", "#757575", "#ef6c00"


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def fill(key: str, lang: str | None, /, **values: object) -> str:
    """The message `key` in `lang` as HTML: the template and plain values escaped; a value wrapped in
    `Markup` is trusted HTML built here (for example `<code>` around an escaped exercise id)."""
    marks = {name: f"\x00{i}\x00" for i, name in enumerate(values)}
    text = esc(t(key, lang, **{n: (marks[n] if isinstance(v, Markup) else v) for n, v in values.items()}))
    for name, value in values.items():
        if isinstance(value, Markup):
            text = text.replace(marks[name], str(value))
    return text


class Markup(str):
    """HTML this module built (already escaped where it holds outside text)."""


def code(text: object) -> Markup:
    return Markup(f"<code>{esc(text)}</code>")


def box(inner: str, colour: str = GREY, cls: str = "tritonlab-message", attrs: str = "") -> str:
    return f'<div class="{cls}"{attrs} style="{BOX.format(colour=colour)}">{inner}</div>'


def message(text: str, kind: str = "info") -> str:
    """A one-paragraph note (kind: info, error, warning), escaped."""
    colour = {"error": RED, "warning": AMBER}.get(kind, GREY)
    return box(f"<span>{esc(text)}</span>", colour, attrs=f' data-kind="{esc(kind)}"')


def cell_location(where: str, source: Source | None, lang: str | None = None) -> tuple[str, str]:
    """("cell line 7", the code on that line) when `where` ("path:line") points into the checked cell file;
    else (where with the path shortened, "")."""
    if not where:
        return "", ""
    path, _, line = where.rpartition(":")
    if source is not None and line.isdigit() and path and _same_file(path, str(source.path)):
        number = int(line)
        lines = source.text.splitlines()
        code = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        label = (
            t("notebook.cell_line", lang, number=number + source.offset)
            if source.from_cell
            else f"{source.path.name}:{number}"
        )
        return label, code
    return where, ""


def _same_file(a: str, b: str) -> bool:
    from pathlib import Path

    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


def hide_paths(text: str, source: Source | None) -> str:
    """Messages and tracebacks name the temporary file of a cell: call it `<cell>` instead."""
    if source is None or not source.from_cell:
        return text
    for name in {str(source.path), str(source.path.resolve())}:
        text = text.replace(name, "<cell>")
    return text


def verdict_html(
    verdict: Verdict, source: Source | None = None, lang: str = "en", sandbox_note: str = ""
) -> str:
    """A verdict the way `print_verdict` groups it: one entry per (kind, cause), its first case in full, the
    other cases that hit the same problem listed after it; the likely cause; the line of the cell to look at.
    The grader's messages, causes and notes are shown in `lang` where the catalog knows them
    (`i18n.translate_grader`); the "still in English" line only when some text is left in English."""
    n_pass = sum(c.passed for c in verdict.cases)
    total = len(verdict.cases)
    meta = t(
        "js.verdict.meta",
        lang,
        backend=verdict.backend,
        seed=verdict.seed,
        seconds=f"{verdict.duration_s:.2f}",
    )
    ex = esc(verdict.exercise)
    if verdict.passed:
        head = f'<b style="color:{GREEN}">{esc(t("js.verdict.all_pass", lang, count=total))}</b> — ' + fill(
            "notebook.passed", lang, exercise=code(verdict.exercise)
        )
    else:
        head = (
            f'<b style="color:{RED}">{esc(t("js.verdict.some_fail", lang, failed=total - n_pass, total=total))}'
            "</b> — " + fill("notebook.not_passed", lang, exercise=code(verdict.exercise))
        )
    parts = [f"<div>{head}</div>", f'<div style="color:{GREY};font-size:90%">{esc(meta)}</div>']
    if not verdict.passed:
        groups: dict[tuple[str, str], list[Failure]] = {}
        for f in verdict.failures:
            groups.setdefault((f.kind, f.cause), []).append(f)
        shown = list(groups.values())[:MAX_GROUPS]
        items = [_failure_item(same, source, lang) for same in shown]
        if items:
            parts.append('<ul style="margin:6px 0;padding-left:20px">' + "".join(items) + "</ul>")
        if len(groups) > MAX_GROUPS:
            parts.append(f"<div>{fill('notebook.more_kinds', lang, count=len(groups) - MAX_GROUPS)}</div>")
        replay = fill(
            "notebook.replay",
            lang,
            command=code(f"%%check {verdict.exercise} --seed {int(verdict.seed)}"),
            hint=code(f"%hint {verdict.exercise}"),
        )
        parts.append(f'<div style="font-size:90%">{replay}</div>')
        if lang != "en" and any(_english_left(same[0], lang) for same in shown):
            parts.append(f'<div style="color:{GREY}">{esc(t("js.verdict.english_details", lang))}</div>')
    for note in verdict.notes:
        text = fill("notebook.note", lang, note=hide_paths(translate_grader(note, lang)[0], source))
        parts.append(f'<div style="color:{GREY}">{text}</div>')
    if verdict.output.strip():
        parts.append(
            f"<details><summary>{fill('notebook.printed', lang)}</summary>"
            f"<pre>{esc(hide_paths(verdict.output[-4000:], source))}</pre></details>"
        )
    if sandbox_note:
        parts.append(f'<div style="color:{AMBER};font-size:90%">{esc(sandbox_note)}</div>')
    attrs = f' data-exercise="{ex}" data-passed="{str(verdict.passed).lower()}"'
    return box("".join(parts), GREEN if verdict.passed else RED, "tritonlab-verdict", attrs)


def _english_left(f: Failure, lang: str) -> bool:
    """Whether the catalog does not know a failure's message or cause (left in English in `lang`)."""
    texts = [f.message] + ([f.cause] if f.cause else [])
    return any(translate_grader(text, lang)[1] != normalize(lang) for text in texts)


def _failure_item(same: Sequence[Failure], source: Source | None, lang: str) -> str:
    f = same[0]
    where, line = cell_location(f.where, source, lang)
    out = [f"<b>{esc(f.case)}</b> — <span style='color:{RED}'>{esc(kind_label(f.kind, lang))}</span>"]
    if where:
        out.append(f' <span style="color:{GREY}">({esc(hide_paths(where, source))})</span>')
    out.append(f"<div>{esc(hide_paths(translate_grader(f.message, lang)[0], source))}</div>")
    if line:
        out.append(f"<div>{esc(t('js.verdict.look_at', lang))}{code(line)}</div>")
    if f.cause:
        out.append(
            f"<div><i>{esc(t('cli.verdict.likely_cause', lang))}</i> "
            f"{esc(hide_paths(translate_grader(f.cause, lang)[0], source))}</div>"
        )
    if len(same) > 1:
        others = ", ".join(g.case for g in same[1:5]) + (", …" if len(same) > 5 else "")
        text = t("cli.verdict.same_in", lang, count=len(same) - 1, cases=others)
        out.append(f'<div style="color:{GREY}">{esc(text)}</div>')
    return f"<li>{''.join(out)}</li>"


def hint_html(
    exercise_id: str, number: int, total: int, text: str, all_shown: bool = False, lang: str | None = None
) -> str:
    if all_shown:
        title = fill("notebook.all_hints", lang, total=total, exercise=code(exercise_id))
    else:
        title = fill("notebook.hint", lang, number=number, total=total, exercise=code(exercise_id))
    return box(
        f"<div>{title}</div><div style='white-space:pre-wrap'>{esc(text)}</div>", GREY, "tritonlab-hint"
    )


TAG = re.compile(r"<[^>]+>")
BLOCK = re.compile(r"<(?=(?:div|li|ul)\b)|</(?:div|li|ul)>")


def plain(markup: str) -> str:
    """The text of a piece of this module's HTML (for the text/plain fallback of a display): each block
    (div, li) on a line of its own, blank lines dropped."""
    text = html.unescape(TAG.sub("", BLOCK.sub(lambda m: "\n" + m.group(0), markup)))
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())
