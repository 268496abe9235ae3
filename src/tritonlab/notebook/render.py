"""HTML for a notebook: verdicts, hints, bench rows, messages. Pure functions, no IPython.

Everything that comes from the learner (their code, what it printed, messages naming their values) or from a
run goes through `html.escape`; the only markup is the one written here.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tritonlab.i18n import kind_label, t

if TYPE_CHECKING:
    from tritonlab.models import Failure, Verdict
    from tritonlab.notebook.session import Source

MAX_GROUPS = 6
BOX = "font-family:system-ui,sans-serif;border-left:4px solid {colour};padding:6px 10px;margin:4px 0"
GREEN, RED, GREY, AMBER = "#2e7d32", "#c62828", "#757575", "#ef6c00"


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def box(inner: str, colour: str = GREY, cls: str = "tritonlab-message", attrs: str = "") -> str:
    return f'<div class="{cls}"{attrs} style="{BOX.format(colour=colour)}">{inner}</div>'


def message(text: str, kind: str = "info") -> str:
    """A one-paragraph note (kind: info, error, warning), escaped."""
    colour = {"error": RED, "warning": AMBER}.get(kind, GREY)
    return box(f"<span>{esc(text)}</span>", colour, attrs=f' data-kind="{esc(kind)}"')


def cell_location(where: str, source: Source | None) -> tuple[str, str]:
    """("cell line 7", the code on that line) when `where` ("path:line") points into the checked cell file;
    else (where with the path shortened, "")."""
    if not where:
        return "", ""
    path, _, line = where.rpartition(":")
    if source is not None and line.isdigit() and path and _same_file(path, str(source.path)):
        number = int(line)
        lines = source.text.splitlines()
        code = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        label = f"cell line {number + source.offset}" if source.from_cell else f"{source.path.name}:{number}"
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
    other cases that hit the same problem listed after it; the likely cause; the line of the cell to look at."""
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
        head = (
            f'<b style="color:{GREEN}">{esc(t("js.verdict.all_pass", lang, count=total))}</b> — '
            f"<code>{ex}</code> passed"
        )
    else:
        head = (
            f'<b style="color:{RED}">{esc(t("js.verdict.some_fail", lang, failed=total - n_pass, total=total))}'
            f"</b> — <code>{ex}</code> not passed yet"
        )
    parts = [f"<div>{head}</div>", f'<div style="color:{GREY};font-size:90%">{esc(meta)}</div>']
    if not verdict.passed:
        groups: dict[tuple[str, str], list[Failure]] = {}
        for f in verdict.failures:
            groups.setdefault((f.kind, f.cause), []).append(f)
        items = [_failure_item(same, source, lang) for same in list(groups.values())[:MAX_GROUPS]]
        if items:
            parts.append('<ul style="margin:6px 0;padding-left:20px">' + "".join(items) + "</ul>")
        if len(groups) > MAX_GROUPS:
            parts.append(f"<div>… and {len(groups) - MAX_GROUPS} more kind(s) of failure.</div>")
        parts.append(
            f'<div style="font-size:90%">Replay exactly these cases: <code>%%check {ex} --seed '
            f"{int(verdict.seed)}</code> · stuck? <code>%hint {ex}</code></div>"
        )
        if lang != "en" and verdict.failures:
            parts.append(f'<div style="color:{GREY}">{esc(t("js.verdict.english_details", lang))}</div>')
    for note in verdict.notes:
        parts.append(f'<div style="color:{GREY}">note: {esc(hide_paths(note, source))}</div>')
    if verdict.output.strip():
        parts.append(
            "<details><summary>What your code printed</summary>"
            f"<pre>{esc(hide_paths(verdict.output[-4000:], source))}</pre></details>"
        )
    if sandbox_note:
        parts.append(f'<div style="color:{AMBER};font-size:90%">{esc(sandbox_note)}</div>')
    attrs = f' data-exercise="{ex}" data-passed="{str(verdict.passed).lower()}"'
    return box("".join(parts), GREEN if verdict.passed else RED, "tritonlab-verdict", attrs)


def _failure_item(same: Sequence[Failure], source: Source | None, lang: str) -> str:
    f = same[0]
    where, code = cell_location(f.where, source)
    out = [f"<b>{esc(f.case)}</b> — <span style='color:{RED}'>{esc(kind_label(f.kind, lang))}</span>"]
    if where:
        out.append(f' <span style="color:{GREY}">({esc(hide_paths(where, source))})</span>')
    out.append(f"<div>{esc(hide_paths(f.message, source))}</div>")
    if code:
        out.append(f"<div>{esc(t('js.verdict.look_at', lang))}<code>{esc(code)}</code></div>")
    if f.cause:
        out.append(
            f"<div><i>{esc(t('cli.verdict.likely_cause', lang))}</i> {esc(hide_paths(f.cause, source))}</div>"
        )
    if len(same) > 1:
        others = ", ".join(g.case for g in same[1:5]) + (", …" if len(same) > 5 else "")
        text = t("cli.verdict.same_in", lang, count=len(same) - 1, cases=others)
        out.append(f'<div style="color:{GREY}">{esc(text)}</div>')
    return f"<li>{''.join(out)}</li>"


def hint_html(exercise_id: str, number: int, total: int, text: str, all_shown: bool = False) -> str:
    title = (
        f"All {total} hints shown for <code>{esc(exercise_id)}</code>; the last one again:"
        if all_shown
        else f"<b>Hint {number}/{total}</b> for <code>{esc(exercise_id)}</code>:"
    )
    return box(
        f"<div>{title}</div><div style='white-space:pre-wrap'>{esc(text)}</div>", GREY, "tritonlab-hint"
    )


def bench_html(exercise_id: str, data: dict[str, Any]) -> str:
    """The rows of a learner bench (perf.bench_learner) as a table: time, rate and speed-up per implementation."""
    parts = [
        f"<div><b>Speed of <code>{esc(exercise_id)}</code></b> — 'ours x' is how many times faster your "
        "kernel is than each of the others.</div>"
    ]
    if data.get("import_error"):
        err = data["import_error"]
        parts.append(f"<div style='color:{RED}'>{esc(err.get('type'))}: {esc(err.get('message'))}</div>")
    for problem in data.get("problems", []):
        parts.append(f"<div style='color:{RED}'>{esc(problem)}</div>")
    rows = data.get("rows") or []
    if rows:
        head = "".join(f"<th>{h}</th>" for h in ("case", "implementation", "ms", "GB/s", "TFLOP/s", "ours x"))
        body = []
        for row in rows:
            label = f"{row.get('kernel')} {row.get('dtype')} {'x'.join(map(str, row.get('shape', ())))}"
            for name, timing in row.get("impls", {}).items():
                if "error" in timing:
                    cells = [label, name, "error: " + str(timing["error"])[:80], "", "", ""]
                else:
                    speed = row.get("speedup", {}).get(name)
                    cells = [
                        label,
                        name,
                        _num(timing.get("ms"), 4),
                        _num(timing.get("gbps"), 0),
                        _num(timing.get("tflops"), 1),
                        "" if speed is None else _num(speed, 2),
                    ]
                body.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
    return box("".join(parts), GREY, "tritonlab-bench")


def _num(value: Any, digits: int) -> str:
    try:
        return f"{float(value):.{digits}f}"
    except (TypeError, ValueError):
        return ""


TAG = re.compile(r"<[^>]+>")


def plain(markup: str) -> str:
    """The text of a piece of this module's HTML (for the text/plain fallback of a display)."""
    return html.unescape(TAG.sub("", markup.replace("</div>", "\n").replace("</li>", "\n"))).strip()
