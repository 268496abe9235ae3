"""What `%bench` shows: the speed table and the roofline, as one piece of HTML.

Input: the dict `perf.bench_learner.run` returns (rows written by the sandboxed child, so as untrusted as any
file a run writes) and the GPU's measured ceilings from the parent (`perf.peaks.get_peaks`, trusted). Every
row is re-read here: a row or a timing of the wrong shape is dropped and counted, numbers must be finite,
labels drawn on the picture keep only plain characters (matplotlib reads `$...$` as math). The roofline is an
SVG drawn by `viz.roofline`, embedded as an `<img>` data URI (an image cannot run scripts); when it cannot be
drawn the table still shows, with the reason. Nothing here raises for bad data.
"""

from __future__ import annotations

import base64
import math
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonlab.i18n import t
from tritonlab.notebook.render import GREY, RED, box, code, esc, fill

LEARNER = "your kernel"  # perf.bench_learner.LEARNER: the learner's timing in a row's impls
MAX_ROWS = 64
MAX_IMPLS = 8
_PLAIN = re.compile(r"[^A-Za-z0-9_.,:×+\- ]")


@dataclass
class Timing:
    name: str
    ms: float | None = None
    gbps: float | None = None
    tflops: float | None = None
    speedup: float | None = None
    error: str = ""


@dataclass
class Row:
    label: str
    flops: float
    nbytes: float
    bound: str
    timings: list[Timing] = field(default_factory=list)


def number(value: Any) -> float | None:
    """A finite, non-negative float, else None (bools, strings, NaN and infinities included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else None


def plain_text(value: Any, limit: int = 60) -> str:
    return _PLAIN.sub("?", str(value))[:limit]


def read_rows(data: Any) -> tuple[list[Row], int]:
    """(the rows that have the shape of a bench row, how many were dropped)."""
    raw = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        return [], 0
    rows, dropped = [], max(0, len(raw) - MAX_ROWS)
    for item in raw[:MAX_ROWS]:
        row = _read_row(item)
        if row is None:
            dropped += 1
        else:
            rows.append(row)
    return rows, dropped


def _read_row(item: Any) -> Row | None:
    if not isinstance(item, dict) or not isinstance(item.get("impls"), dict):
        return None
    shape = item.get("shape")
    dims = "x".join(str(int(d)) for d in shape if number(d) is not None) if isinstance(shape, list) else ""
    label = plain_text(f"{item.get('kernel', '?')} {item.get('dtype', '')} {dims}".strip())
    speedups = item.get("speedup") if isinstance(item.get("speedup"), dict) else {}
    row = Row(label, number(item.get("flops")) or 0.0, number(item.get("bytes")) or 0.0, "")
    row.bound = "compute" if item.get("bound") == "compute" else "memory"
    for name, timing in list(item["impls"].items())[:MAX_IMPLS]:
        name = plain_text(name, 40)
        if not isinstance(timing, dict):
            continue
        if "error" in timing:
            row.timings.append(Timing(name, error=str(timing["error"])[:200]))
            continue
        ms = number(timing.get("ms"))
        if not ms:
            continue
        row.timings.append(
            Timing(
                name,
                ms,
                number(timing.get("gbps")),
                number(timing.get("tflops")),
                number(speedups.get(name)),
            )
        )
    return row if row.timings else None


def roof_of(peaks: Any) -> tuple[float, float] | None:
    """(GB/s, TFLOP/s) of measured ceilings, or None when either is missing."""
    if not isinstance(peaks, dict):
        return None
    gbps, tflops = number(peaks.get("copy_gbps")), number(peaks.get("matmul_bf16_tflops"))
    return (gbps, tflops) if gbps and tflops else None


def bench_html(exercise_id: str, data: Any, peaks: Any = None, lang: str | None = None) -> str:
    """The speed table of a learner bench, its problems, and the roofline of this GPU with the rows on it."""
    parts = [
        f"<div><b>{fill('notebook.bench.title', lang, exercise=code(exercise_id))}</b> — "
        f"{fill('notebook.bench.explain', lang)}</div>"
    ]
    data = data if isinstance(data, dict) else {}
    err = data.get("import_error")
    if isinstance(err, dict):
        where = f" ({err.get('where')})" if err.get("where") else ""
        parts.append(
            f"<div style='color:{RED}'>{esc(err.get('type'))}: {esc(err.get('message'))}{esc(where)}</div>"
        )
    problems = data.get("problems") if isinstance(data.get("problems"), list) else []
    for problem in problems[:20]:
        parts.append(f"<div style='color:{RED}'>{esc(str(problem)[:500])}</div>")
    rows, dropped = read_rows(data)
    if dropped:
        parts.append(
            f"<div style='color:{RED}'>{fill('notebook.bench.malformed', lang, count=dropped)}</div>"
        )
    if not rows:
        parts.append(f"<div>{fill('notebook.bench.nothing_timed', lang)}</div>")
        return box("".join(parts), GREY, "tritonlab-bench")
    parts.append(table(rows, lang))
    parts.append(roofline_html(rows, peaks, lang))
    return box("".join(parts), GREY, "tritonlab-bench")


def table(rows: list[Row], lang: str | None) -> str:
    heads = (
        t("notebook.bench.case", lang),
        t("notebook.bench.implementation", lang),
        "ms",
        "GB/s",
        "TFLOP/s",
        t("notebook.bench.speedup", lang),
    )
    body = []
    for row in rows:
        label = row.label
        for timing in row.timings:
            if timing.error:
                cells = [
                    label,
                    timing.name,
                    t("notebook.bench.error", lang, error=timing.error[:80]),
                    "",
                    "",
                    "",
                ]
            else:
                cells = [
                    label,
                    timing.name,
                    _fmt(timing.ms, 4),
                    _fmt(timing.gbps, 0),
                    _fmt(timing.tflops, 1),
                    _fmt(timing.speedup, 2),
                ]
            mine = ' style="font-weight:bold"' if timing.name == LEARNER else ""
            body.append(f"<tr{mine}>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
            label = ""
    head = "".join(f"<th>{esc(h)}</th>" for h in heads)
    return (
        f'<table class="tritonlab-speed"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def _fmt(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def roofline_html(rows: list[Row], peaks: Any, lang: str | None) -> str:
    """The roofline as an `<img>` of SVG, with one line per row of the learner's rate as % of the roof."""
    roof = roof_of(peaks)
    if roof is None:
        return f"<div style='color:{GREY}'>{fill('notebook.bench.no_roof', lang)}</div>"
    gbps, tflops = roof
    from tritonlab.viz.roofline import Point, attainable

    points, lines = [], []
    for row in rows:
        for timing in row.timings:
            if timing.ms is None or not row.nbytes:
                continue
            mine = timing.name == LEARNER
            points.append(
                Point(f"{timing.name} {row.label}", row.flops, row.nbytes, timing.ms / 1e3, mine, timing.name)
            )
            if mine:
                lines.append(_rate_line(row, timing.ms / 1e3, gbps, tflops, attainable, lang))
    if not any(p.flops > 0 for p in points):
        return f"<div style='color:{GREY}'>{fill('notebook.bench.no_points', lang)}</div>"
    gpu = plain_text(peaks.get("gpu") or "this GPU")
    try:
        svg = draw(points, gbps, tflops, t("notebook.bench.roofline_title", lang, gpu=gpu), lang)
    except Exception as exc:  # noqa: BLE001 - a picture that cannot be drawn must not hide the table
        return f"<div style='color:{RED}'>{fill('notebook.bench.roof_failed', lang, error=f'{type(exc).__name__}: {exc}')}</div>"
    src = "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")
    alt = esc(t("notebook.bench.roofline_alt", lang))
    notes = "".join(f"<div>{esc(line)}</div>" for line in lines)
    return (
        f'<div class="tritonlab-roofline"><img alt="{alt}" src="{src}" style="max-width:100%"/>{notes}</div>'
    )


def _rate_line(
    row: Row, seconds: float, gbps: float, tflops: float, attainable: Any, lang: str | None
) -> str:
    if row.bound == "compute" and row.flops:
        achieved = row.flops / seconds / 1e12
        roof, unit = float(attainable(gbps, tflops, row.flops / row.nbytes)), "TFLOP/s"
    else:
        achieved, roof, unit = row.nbytes / seconds / 1e9, gbps, "GB/s"
    pct = 100 * achieved / roof if roof else 0.0
    return t(
        "notebook.bench.your_rate", lang, case=row.label, value=f"{achieved:.4g}", unit=unit, pct=f"{pct:.0f}"
    )


def draw(points: list[Any], gbps: float, tflops: float, title: str, lang: str | None) -> bytes:
    """The roofline of `viz.roofline` as SVG bytes (drawn in a temporary folder, read back)."""
    from tritonlab.viz.roofline import roofline

    label = t("notebook.bench.roof_line", lang, gbps=f"{gbps:.0f}", tflops=f"{tflops:.0f}")
    with tempfile.TemporaryDirectory(prefix="tritonlab-roofline-") as folder:
        path = roofline(
            Path(folder) / "roofline.svg",
            peak_gbps=gbps,
            peak_tflops=tflops,
            others=points,
            title=title,
            roof_label=label,
            show_lines=False,
        )
        return path.read_bytes()
