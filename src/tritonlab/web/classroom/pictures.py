"""The teacher's pictures as inline SVG (classroom/insights.py computes the numbers): where learners are
stuck (a heat map of exercise × failure kind, each cell a link to its learners), the time to a first pass and
the failed checks before it, and on a GPU the class's speeds against the measured roof.

Every number drawn is also written: in the mark's `data-` attributes and <title>, as text on the picture where
it fits (the heat map's counts, the bars' heights), and in the table the page puts beside each picture
(templates/_insights.html), so colour is never the only carrier. Text comes from the database (exercise ids,
usernames): escaped here, like everything Jinja renders. Colours are CSS classes (static/classroom.css), so
both themes apply; the page's Content-Security-Policy forbids inline styles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from markupsafe import Markup, escape

from tritonlab.i18n import kind_label, t

ROW = 28
FONT_W = 7.0  # px per character of the 12 px label font, for the label column's width
TIME_TICKS = (1, 10, 60, 600, 3600, 36_000, 86_400, 604_800, 2_592_000)  # 1 s … 30 d


def duration(seconds: float, lang: str = "en") -> str:
    """A duration for people: 0 s, 45 s, 12 min, 3.5 h, 2.1 d (the same text in pictures and tables)."""
    if seconds < 60:
        return t("classroom_ui.pictures.seconds", lang, n=f"{seconds:.0f}")
    if seconds < 3600:
        return t("classroom_ui.pictures.minutes", lang, n=f"{seconds / 60:.0f}")
    if seconds < 86_400:
        return t("classroom_ui.pictures.hours", lang, n=f"{seconds / 3600:.1f}")
    return t("classroom_ui.pictures.days", lang, n=f"{seconds / 86_400:.1f}")


def pct(value: float) -> str:
    return f"{value:.1f} %"


def num(value: float) -> str:
    """A number as a `data-value` attribute: every digit kept (repr), so a test reads back the stored float."""
    return repr(float(value))


def _attrs(**values: object) -> Markup:
    """` name="value"` pairs, escaped; a trailing _ is dropped (class_) and _ becomes - (data_x → data-x)."""
    parts = []
    for name, value in values.items():
        if value is None:
            continue
        key = name.rstrip("_").replace("_", "-")
        parts.append(Markup(' {}="{}"').format(Markup(key), value))
    return Markup("").join(parts)


def _tag(name: str, content: Iterable[Markup | str] | Markup | str = (), **values: object) -> Markup:
    if isinstance(content, (str, Markup)):
        inner = escape(content)
    else:
        inner = Markup("").join(escape(c) for c in content)
    return Markup("<{0}{1}>{2}</{0}>").format(Markup(name), _attrs(**values), inner)


def _text(x: float, y: float, text: str, **values: object) -> Markup:
    return _tag("text", text, x=f"{x:.1f}", y=f"{y:.1f}", **values)


def _svg(
    name: str, width: float, height: float, title: str, desc: str, body: list[Markup], role: str
) -> Markup:
    head = [_tag("title", title, id=f"pic-{name}-title"), _tag("desc", desc, id=f"pic-{name}-desc")]
    return _tag(
        "svg",
        head + body,
        xmlns="http://www.w3.org/2000/svg",
        class_=f"picture picture-{name}",
        viewBox=f"0 0 {width:.0f} {height:.0f}",
        width=f"{width:.0f}",
        role=role,
        aria_labelledby=f"pic-{name}-title",
        aria_describedby=f"pic-{name}-desc",
        data_picture=name,
    )


def _label_width(rows: list[dict]) -> float:
    return min(220.0, 16 + FONT_W * max((len(r["id"]) for r in rows), default=8))


def heat_level(count: int, most: int) -> int:
    """0 for an empty cell, else 1–4 by the count's share of the largest count."""
    if count <= 0:
        return 0
    return 1 + (3 * (count - 1)) // max(1, most - 1) if most > 1 else 4


def stuck_map(data: dict, lang: str) -> Markup | None:
    """Exercise × failure kind: how many learners are stuck on each (a link to them), and each row's total."""
    rows = [r for r in data["exercises"] if r["stuck"]]
    kinds = data["kinds"]
    if not rows:
        return None
    columns = [*kinds, ""]  # the last column: every stuck learner of the exercise
    names = [
        t("classroom_ui.pictures.no_kind", lang) if k == "none" else kind_label(k, lang) if k else
        t("classroom_ui.pictures.all_kinds", lang) for k in columns
    ]  # fmt: skip
    # the column names are written at 40°: their height is what the longest needs (sin 40° ≈ 0.64)
    label_w, cell_w = _label_width(rows), 56.0
    head_h = 24 + 0.64 * FONT_W * 0.92 * max(len(n) for n in names)
    width = label_w + cell_w * len(columns) + 12
    height = head_h + ROW * len(rows) + 8
    most = max(len(u) for r in rows for u in r["stuck"].values())
    body: list[Markup] = []
    for j, name in enumerate(names):
        x = label_w + cell_w * j + cell_w / 2
        body.append(
            _text(x, head_h - 8, name, class_="axis-label", transform=f"rotate(-40 {x:.1f} {head_h - 8:.1f})")
        )
    for i, row in enumerate(rows):
        y = head_h + ROW * i
        body.append(_text(label_w - 8, y + ROW / 2 + 4, row["id"], class_="row-label", text_anchor="end"))
        for j, kind in enumerate(columns):
            users = row["stuck"].get(kind, []) if kind else [u for us in row["stuck"].values() for u in us]
            count, x = len(users), label_w + cell_w * j
            level = heat_level(count, most) if kind else 0
            rect = _tag(
                "rect", (), x=f"{x + 1:.1f}", y=f"{y + 1:.1f}", width=f"{cell_w - 2:.0f}", height=f"{ROW - 2:.0f}",
                class_=f"heat heat-{level}" + (" heat-total" if not kind else ""),
            )  # fmt: skip
            what = t("classroom_ui.pictures.cell", lang, exercise=row["id"], count=count,
                     kind=kind_label(kind, lang) if kind else t("classroom_ui.pictures.all_kinds", lang))  # fmt: skip
            cell = [rect, _tag("title", what)]
            if count:
                cell.append(
                    _text(
                        x + cell_w / 2,
                        y + ROW / 2 + 4,
                        str(count),
                        class_=f"heat-count on-{level}",
                        text_anchor="middle",
                    )  # fmt: skip
                )
            group = _tag(
                "g",
                cell,
                class_="cell",
                data_exercise=row["id"],
                data_kind=kind or "*",
                data_value=str(count),
            )
            if count:
                href = f"/teacher/exercises/{row['id']}?kind={kind or '*'}"
                group = _tag("a", [group], href=href, aria_label=what)
            body.append(group)
    title = t("classroom_ui.pictures.stuck_title", lang)
    return _svg("stuck", width, height, title, t("classroom_ui.pictures.stuck_desc", lang), body, "group")


def _time_x(seconds: float, left: float, span: float, top: float) -> float:
    return left + span * math.log10(max(seconds, 1.0)) / math.log10(top)


def _dot_row(
    body: list[Markup],
    y: float,
    marks: list[tuple[float, float, str, dict]],
    median_x: float,
    median: str,
    median_data: dict,
) -> None:
    """One row of a dot plot: the range line, a dot per learner (x, value, title, data), the median bar."""
    xs = [m[0] for m in marks]
    body.append(_tag("line", (), x1=f"{min(xs):.1f}", x2=f"{max(xs):.1f}", y1=f"{y:.1f}", y2=f"{y:.1f}",
                     class_="range"))  # fmt: skip
    for x, _value, title, data in marks:
        body.append(_tag("circle", [_tag("title", title)], cx=f"{x:.1f}", cy=f"{y:.1f}", r="5", class_="dot",
                         **data))  # fmt: skip
    body.append(_tag("line", [_tag("title", median)], x1=f"{median_x:.1f}", x2=f"{median_x:.1f}",
                     y1=f"{y - 10:.1f}", y2=f"{y + 10:.1f}", class_="median", **median_data))  # fmt: skip


def time_to_pass(data: dict, lang: str) -> Markup | None:
    """Per exercise, a dot per learner at the time from their first check to their first pass (log scale)."""
    rows = [r for r in data["exercises"] if r["times"]]
    if not rows:
        return None
    longest = max(tm["seconds"] for r in rows for tm in r["times"])
    top = next((tick for tick in TIME_TICKS if tick >= max(longest, 60)), TIME_TICKS[-1])
    if longest > top:
        top = 10 ** math.ceil(math.log10(longest))
    label_w, span, head_h = _label_width(rows), 520.0, 24.0
    width, height = label_w + span + 40, head_h + ROW * len(rows) + 30
    body: list[Markup] = []
    axis_y = head_h + ROW * len(rows) + 4
    for tick in [*[tk for tk in TIME_TICKS if tk <= top], *([top] if top not in TIME_TICKS else [])]:
        x = _time_x(tick, label_w, span, top)
        body.append(_tag("line", (), x1=f"{x:.1f}", x2=f"{x:.1f}", y1=f"{head_h:.1f}", y2=f"{axis_y:.1f}",
                         class_="grid"))  # fmt: skip
        label = (
            "≤ " + duration(tick, lang) if tick == 1 else duration(tick, lang)
        )  # 0 s (a first-try pass) sits here
        body.append(_text(x, axis_y + 16, label, class_="axis-label", text_anchor="middle"))
    names = data["learners"]
    for i, row in enumerate(rows):
        y = head_h + ROW * i + ROW / 2
        body.append(_text(label_w - 8, y + 4, row["id"], class_="row-label", text_anchor="end"))
        marks = []
        for tm in row["times"]:
            who = names.get(tm["user_id"], {}).get("username", "?")
            marks.append((_time_x(tm["seconds"], label_w, span, top), tm["seconds"],
                          f"{who}: {duration(tm['seconds'], lang)}",
                          {"data_exercise": row["id"], "data_user": who, "data_value": num(tm["seconds"])}))  # fmt: skip
        median = row["time_spread"]["median"]
        _dot_row(body, y, marks, _time_x(median, label_w, span, top),
                 t("classroom_ui.pictures.median", lang, value=duration(median, lang)),
                 {"data_exercise": row["id"], "data_value": num(median)})  # fmt: skip
    title = t("classroom_ui.pictures.time_title", lang)
    return _svg("time", width, height, title, t("classroom_ui.pictures.time_desc", lang), body, "img")


def attempts_bars(data: dict, lang: str) -> Markup | None:
    """Per exercise, a small histogram: how many learners passed after 0, 1, 2 … failed checks."""
    rows = [r for r in data["exercises"] if r["attempts"]]
    if not rows:
        return None
    buckets = data["buckets"]
    label_w, bar_w, gap, row_h, head_h = _label_width(rows), 32.0, 10.0, 46.0, 26.0
    width = label_w + (bar_w + gap) * len(buckets) + 12
    height = head_h + row_h * len(rows) + 6
    most = max(max(r["buckets"]) for r in rows)
    body: list[Markup] = []
    for k, label in enumerate(buckets):
        x = label_w + (bar_w + gap) * k + bar_w / 2
        body.append(_text(x, head_h - 8, label, class_="axis-label", text_anchor="middle"))
    for i, row in enumerate(rows):
        base = head_h + row_h * (i + 1) - 6
        body.append(_text(label_w - 8, base - 8, row["id"], class_="row-label", text_anchor="end"))
        body.append(_tag("line", (), x1=f"{label_w:.1f}", x2=f"{width - 12:.1f}", y1=f"{base:.1f}",
                         y2=f"{base:.1f}", class_="baseline"))  # fmt: skip
        for k, count in enumerate(row["buckets"]):
            x = label_w + (bar_w + gap) * k
            high = (row_h - 20) * count / most if most else 0
            title = t("classroom_ui.pictures.bar", lang, exercise=row["id"], count=count, failed=buckets[k])
            parts = [_tag("title", title)]
            if count:
                parts.append(_tag("rect", (), x=f"{x:.1f}", y=f"{base - high:.1f}", width=f"{bar_w:.0f}",
                                  height=f"{high:.1f}", class_="bar"))  # fmt: skip
                parts.append(_text(x + bar_w / 2, base - high - 3, str(count), class_="bar-count",
                                   text_anchor="middle"))  # fmt: skip
            body.append(_tag("g", parts, class_="bars", data_exercise=row["id"], data_bucket=buckets[k],
                             data_value=str(count)))  # fmt: skip
    title = t("classroom_ui.pictures.attempts_title", lang)
    return _svg("attempts", width, height, title, t("classroom_ui.pictures.attempts_desc", lang), body, "img")


def speed_roof(data: dict, lang: str) -> Markup | None:
    """Per exercise, a dot per learner at their fastest passing GPU check's % of the measured roof."""
    rows = [r for r in data["exercises"] if r["speed_spread"]]
    if not rows:
        return None
    top = 110.0 if any(s["pct"] and s["pct"] > 100 for r in rows for s in r["speeds"]) else 100.0
    label_w, span, head_h = _label_width(rows), 520.0, 24.0
    width, height = label_w + span + 40, head_h + ROW * len(rows) + 30
    axis_y = head_h + ROW * len(rows) + 4

    def x_of(value: float) -> float:
        return label_w + span * value / top

    body: list[Markup] = []
    for tick in (0, 25, 50, 75, 100):
        cls = "roof" if tick == 100 else "grid"
        body.append(_tag("line", (), x1=f"{x_of(tick):.1f}", x2=f"{x_of(tick):.1f}", y1=f"{head_h - 14:.1f}",
                         y2=f"{axis_y:.1f}", class_=cls))  # fmt: skip
        body.append(_text(x_of(tick), axis_y + 16, f"{tick} %", class_="axis-label", text_anchor="middle"))
    body.append(_text(x_of(100) - 4, head_h - 16, t("classroom_ui.pictures.roof", lang), class_="roof-label",
                      text_anchor="end"))  # fmt: skip
    names = data["learners"]
    for i, row in enumerate(rows):
        y = head_h + ROW * i + ROW / 2
        body.append(_text(label_w - 8, y + 4, row["id"], class_="row-label", text_anchor="end"))
        marks = []
        for sp in row["speeds"]:
            if sp["pct"] is None:
                continue
            who = names.get(sp["user_id"], {}).get("username", "?")
            rate = f"{sp['achieved']:g} {sp['unit']}" if sp["achieved"] is not None and sp["unit"] else ""
            marks.append((x_of(sp["pct"]), sp["pct"], f"{who}: {pct(sp['pct'])} {rate}".strip(),
                          {"data_exercise": row["id"], "data_user": who, "data_value": num(sp["pct"])}))  # fmt: skip
        median = row["speed_spread"]["median"]
        _dot_row(body, y, marks, x_of(median), t("classroom_ui.pictures.median", lang, value=pct(median)),
                 {"data_exercise": row["id"], "data_value": num(median)})  # fmt: skip
    title = t("classroom_ui.pictures.speed_title", lang)
    return _svg("speed", width, height, title, t("classroom_ui.pictures.speed_desc", lang), body, "img")


PICTURES = {"stuck": stuck_map, "time": time_to_pass, "attempts": attempts_bars, "speed": speed_roof}
