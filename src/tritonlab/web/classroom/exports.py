"""The teacher's pictures exported (under /api/classroom/: teachers only, the guard says so):

- `GET /api/classroom/insights.json`: the numbers (classroom/insights.py), as the page draws them;
- `GET /api/classroom/insights/{name}.csv`: one row per learner (per cell for `stuck`), usernames and numbers,
  every text cell made safe for spreadsheets (room.csv_safe);
- `GET /api/classroom/insights/{name}.png`: the picture drawn by matplotlib in the server. Bounded: at most
  `MAX_ROWS` exercises drawn (a course has ~20; the rest are named as cut), a fixed size per row and dpi, one
  drawing at a time (another gets 429 with Retry-After), `PNG_PER_MINUTE` per teacher, and the last few
  drawings kept, so the same picture asked again costs nothing.
"""

from __future__ import annotations

import collections
import csv
import hashlib
import io
import json
import math
import threading
import time

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import PlainTextResponse, Response

from tritonlab.classroom.room import csv_safe
from tritonlab.i18n import kind_label, t
from tritonlab.web import lang as weblang
from tritonlab.web.classroom.login import classroom_of, user_of
from tritonlab.web.classroom.pictures import TIME_TICKS, duration

router = APIRouter(prefix="/api/classroom")
NAMES = ("stuck", "time", "attempts", "speed")
MAX_ROWS = 60
PNG_PER_MINUTE = 12
CACHED = 8
DPI = 100

_drawing = threading.Lock()
_state = threading.Lock()
_cache: collections.OrderedDict[tuple[str, str, str], bytes] = collections.OrderedDict()
_recent: dict[int, collections.deque[float]] = collections.defaultdict(collections.deque)


def _data(request: Request) -> dict:
    return classroom_of(request).insights(request.app.state.service.course)


def _name(request: Request, name: str) -> str:
    if name not in NAMES:
        message = t("classroom_ui.pictures.unknown", weblang.request_lang(request), name=name[:40],
                    names=", ".join(NAMES))  # fmt: skip
        raise HTTPException(404, message)
    return name


@router.get("/insights.json")
def insights_json(request: Request) -> dict:
    data = _data(request)
    return {**data, "learners": {str(k): v for k, v in data["learners"].items()}}


def csv_rows(name: str, data: dict) -> list[list[object]]:
    """The CSV of one picture: a header, then one row per learner (per stuck cell for `stuck`)."""
    who = {k: v["username"] for k, v in data["learners"].items()}
    if name == "stuck":
        rows: list[list[object]] = [["exercise", "failure_kind", "learners", "usernames"]]
        for r in data["exercises"]:
            for kind in data["kinds"]:
                users = r["stuck"].get(kind, [])
                if users:
                    rows.append([r["id"], kind, len(users), " ".join(who.get(u, "?") for u in users)])
    elif name == "time":
        rows = [["exercise", "username", "seconds_to_first_pass"]]
        rows += [
            [r["id"], who.get(tm["user_id"], "?"), tm["seconds"]]
            for r in data["exercises"]
            for tm in r["times"]
        ]
    elif name == "attempts":
        rows = [["exercise", "username", "failed_checks_before_first_pass"]]
        rows += [
            [r["id"], who.get(a["user_id"], "?"), a["failed_before"]]
            for r in data["exercises"]
            for a in r["attempts"]
        ]
    else:
        rows = [["exercise", "username", "pct_of_roof", "achieved", "unit", "ms", "gpu"]]
        for r in data["exercises"]:
            for sp in r["speeds"]:
                rows.append([r["id"], who.get(sp["user_id"], "?"), sp["pct"], sp["achieved"], sp["unit"],
                             sp["ms"], sp["gpu"]])  # fmt: skip
    return rows


@router.get("/insights/{name}.csv")
def insights_csv(name: str, request: Request) -> PlainTextResponse:
    name = _name(request, name)
    out = io.StringIO()
    writer = csv.writer(out)
    for row in csv_rows(name, _data(request)):
        writer.writerow(["" if v is None else csv_safe(v) for v in row])
    return PlainTextResponse(
        out.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}.csv"'},
    )


def _admit(request: Request) -> None:
    """At most PNG_PER_MINUTE drawings per teacher a minute (429 with Retry-After beyond)."""
    user = user_of(request)
    now = time.monotonic()
    with _state:
        recent = _recent[user.id]
        while recent and now - recent[0] > 60:
            recent.popleft()
        if len(recent) >= PNG_PER_MINUTE:
            wait = int(60 - (now - recent[0])) + 1
            message = t("classroom_ui.pictures.too_many", weblang.request_lang(request), count=PNG_PER_MINUTE,
                        wait=wait)  # fmt: skip
            raise HTTPException(429, message, headers={"Retry-After": str(wait)})
        recent.append(now)


@router.get("/insights/{name}.png")
def insights_png(name: str, request: Request) -> Response:
    name = _name(request, name)
    lang = weblang.request_lang(request)
    data = _data(request)
    key = (name, lang, hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest())
    with _state:
        png = _cache.get(key)
    if png is None:
        _admit(request)
        if not _drawing.acquire(blocking=False):
            raise HTTPException(429, t("classroom_ui.pictures.busy", lang), headers={"Retry-After": "3"})
        try:
            png = draw_png(name, data, lang)
        finally:
            _drawing.release()
        with _state:
            _cache[key] = png
            while len(_cache) > CACHED:
                _cache.popitem(last=False)
    return Response(
        png,
        media_type="image/png",
        headers={"Content-Disposition": f'attachment; filename="{name}.png"', "Cache-Control": "no-store"},
    )


# ---- the PNG pictures (matplotlib, Agg, no pyplot state) ----------------------------------------------------


def draw_png(name: str, data: dict, lang: str) -> bytes:
    """One picture as PNG bytes, its size bounded by MAX_ROWS."""
    from tritonlab.viz.style import figure

    key = {"stuck": "stuck", "time": "times", "attempts": "attempts", "speed": "speed_spread"}[name]
    rows = [r for r in data["exercises"] if r[key]]
    cut = max(0, len(rows) - MAX_ROWS)
    rows = rows[:MAX_ROWS]
    fig = figure(9.5, 1.6 + 0.34 * max(1, len(rows)))
    ax = fig.add_subplot()
    title = t(f"classroom_ui.pictures.{name}_title", lang)
    if not rows:
        ax.axis("off")
        ax.set_title(title, loc="left")
        ax.text(0, 0.5, t(f"classroom_ui.pictures.{'time' if name == 'attempts' else name}_none", lang),
                transform=ax.transAxes)  # fmt: skip
    else:
        {"stuck": _stuck, "time": _time, "attempts": _attempts, "speed": _speed}[name](ax, rows, data, lang)
        ax.set_title(title + (f" (+{cut} …)" if cut else ""), loc="left")
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI)
    return out.getvalue()


def _rows_axis(ax, rows: list[dict]) -> None:  # noqa: ANN001
    ax.set_yticks(range(len(rows)), [r["id"] for r in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)


def _stuck(ax, rows: list[dict], data: dict, lang: str) -> None:  # noqa: ANN001
    import numpy as np

    kinds = data["kinds"]
    counts = np.array([[len(r["stuck"].get(k, [])) for k in kinds] for r in rows], dtype=float)
    ax.imshow(np.where(counts > 0, counts, np.nan), cmap="Blues", vmin=0, vmax=max(1.0, counts.max()) * 1.15,
              aspect="auto")  # fmt: skip
    for (i, j), value in np.ndenumerate(counts):
        if value:
            dark = value > counts.max() * 0.6
            ax.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=9, weight="bold",
                    color="white" if dark else "black")  # fmt: skip
    labels = [t("classroom_ui.pictures.no_kind", lang) if k == "none" else kind_label(k, lang) for k in kinds]
    ax.set_xticks(range(len(kinds)), labels, rotation=35, ha="right", fontsize=8)
    _rows_axis(ax, rows)


def _dots(ax, rows: list[dict], points: list[list[float]], medians: list[float]) -> None:  # noqa: ANN001
    for i, values in enumerate(points):
        ax.scatter(values, [i] * len(values), s=22, alpha=0.55, color="#2c4fd1", zorder=3)
        ax.plot([medians[i]] * 2, [i - 0.3, i + 0.3], color="black", lw=2.5, zorder=4)
    _rows_axis(ax, rows)
    ax.grid(axis="x", color="0.88")


def _time(ax, rows: list[dict], data: dict, lang: str) -> None:  # noqa: ANN001
    points = [[max(1.0, tm["seconds"]) for tm in r["times"]] for r in rows]
    _dots(ax, rows, points, [max(1.0, r["time_spread"]["median"]) for r in rows])
    ax.set_xscale("log")
    top = max(max(p) for p in points)
    ticks = [tk for tk in TIME_TICKS if tk <= max(60, top) * 1.01] or [1]
    ax.set_xticks(ticks, [duration(tk, lang) for tk in ticks], fontsize=8)
    ax.set_xlim(0.8, 10 ** math.ceil(math.log10(max(60.0, top)) + 0.05))


def _attempts(ax, rows: list[dict], data: dict, lang: str) -> None:  # noqa: ANN001
    buckets = data["buckets"]
    most = max(max(r["buckets"]) for r in rows) or 1
    for i, r in enumerate(rows):
        heights = [0.8 * c / most for c in r["buckets"]]
        ax.bar(
            range(len(buckets)), heights, bottom=[i + 0.4 - h for h in heights], width=0.7, color="#2c4fd1"
        )
        for k, c in enumerate(r["buckets"]):
            if c:
                ax.text(k, i + 0.4 - heights[k] - 0.02, str(c), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(buckets)), buckets, fontsize=8)
    _rows_axis(ax, rows)


def _speed(ax, rows: list[dict], data: dict, lang: str) -> None:  # noqa: ANN001
    rows = [r for r in rows if r["speed_spread"]]
    points = [[sp["pct"] for sp in r["speeds"] if sp["pct"] is not None] for r in rows]
    _dots(ax, rows, points, [r["speed_spread"]["median"] for r in rows])
    ax.axvline(100, color="#b3242c", ls="--", lw=1.5)
    ax.text(
        99, -0.45, t("classroom_ui.pictures.roof", lang), color="#b3242c", ha="right", va="bottom", fontsize=8
    )
    ax.set_xlim(0, 112)
    ax.set_xlabel("%")
