"""The teacher's pictures of a class, as numbers: computed here from the classroom database, drawn by the web
page (web/classroom/pictures.py as SVG, web/classroom/exports.py as PNG and CSV). One exercise is one row of
every picture; only enabled learner accounts count.

- **stuck**: per exercise and failure kind, the learners who checked it, have not passed it, and whose latest
  failed check failed with that kind (a learner counts once per exercise; a failed check that recorded no
  failure, such as one stopped by the learner, counts under `NO_KIND`).
- **time to first pass**: per learner who passed, the seconds from their first check of the exercise to their
  first passing check (0: they passed at their first check).
- **attempts before a pass**: per learner who passed, the failed checks before their first passing check,
  counted in `BUCKETS`.
- **speed against the roof** (GPU checks only): per learner with a timed passing GPU check, their fastest
  one's achieved rate as a percentage of the GPU's measured roof (`speed.pct_of_roof` of the verdict, the
  number the leaderboard ranks by time; store/leaderboard.py refuses reports above 110 %). A timing without a
  measured roof is counted apart (`unplaced`), never drawn at a guessed place.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

from tritonlab.models import FAILURE_KINDS, Course
from tritonlab.store.classroom import ClassroomDB

NO_KIND = "none"
# (label, lowest, highest) failed checks before the first pass; None: no upper bound
BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("0", 0, 0),
    ("1", 1, 1),
    ("2", 2, 2),
    ("3", 3, 3),
    ("4", 4, 4),
    ("5-9", 5, 9),
    ("10+", 10, None),
)
MAX_PCT = 110.0  # store/leaderboard.MAX_PCT_OF_ROOF: what a stored speed may claim


def bucket_of(failed_before: int) -> int:
    """The index in BUCKETS of a number of failed checks."""
    for index, (_label, low, high) in enumerate(BUCKETS):
        if failed_before >= low and (high is None or failed_before <= high):
            return index
    raise ValueError(f"no bucket for {failed_before}")


def spread(values: Iterable[float]) -> dict | None:
    """{n, min, median, max} of some numbers, or None when there are none."""
    seen = sorted(values)
    if not seen:
        return None
    return {"n": len(seen), "min": seen[0], "median": statistics.median(seen), "max": seen[-1]}


def _number(value: Any, low: float = 0.0, high: float = math.inf) -> float | None:
    """A finite number in [low, high] from a stored verdict, else None (verdicts carry what a child measured)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and low <= value <= high else None


def _speed(verdict: dict) -> dict:
    """The fields of a verdict's speed report the pictures use, each checked (None when not usable)."""
    speed = verdict.get("speed") if isinstance(verdict.get("speed"), dict) else {}
    unit = speed.get("unit") if speed.get("unit") in ("GB/s", "TFLOP/s") else None
    gpu = speed.get("gpu")
    return {
        "pct": _number(speed.get("pct_of_roof"), 0.0, MAX_PCT),
        "achieved": _number(speed.get("achieved")),
        "roof": _number(speed.get("roof")),
        "unit": unit,
        "gpu": str(gpu)[:128] if isinstance(gpu, str) and gpu else None,
    }


def class_insights(db: ClassroomDB, exercises: list[str]) -> dict:
    """The four pictures' numbers for the class, one row per exercise of `exercises` (the course's order) that
    any enabled learner checked: {"kinds", "exercises": [...], "learners": {id: {username, display_name}}}."""
    learners = {
        u.id: {"username": u.username, "display_name": u.display_name}
        for u in db.users()
        if u.role == "learner" and not u.disabled
    }
    history = [row for row in db.attempt_history() if row["user_id"] in learners]
    known = set(exercises)
    per: dict[tuple[int, str], list[dict]] = {}
    for row in history:
        if row["exercise"] in known:
            per.setdefault((row["user_id"], row["exercise"]), []).append(row)

    rows: dict[str, dict] = {}
    fastest: dict[tuple[int, str], dict] = {}
    for (user, exercise), checks in per.items():
        row = rows.setdefault(
            exercise,
            {"id": exercise, "tried": 0, "passed": 0, "stuck": {}, "times": [], "attempts": [], "speeds": []},
        )
        row["tried"] += 1
        first_pass = next((i for i, c in enumerate(checks) if c["passed"]), None)
        if first_pass is None:
            failed = [c for c in checks if not c["passed"]]
            kind = failed[-1]["failure_kind"] or NO_KIND
            row["stuck"].setdefault(kind, []).append(user)
            continue
        row["passed"] += 1
        row["times"].append(
            {"user_id": user, "seconds": max(0.0, checks[first_pass]["at"] - checks[0]["at"])}
        )
        row["attempts"].append({"user_id": user, "failed_before": first_pass})
        timed = [c for c in checks if c["passed"] and c["speed_ms"] is not None]
        if timed:
            fastest[(user, exercise)] = min(timed, key=lambda c: (c["speed_ms"], c["id"]))

    verdicts = db.verdicts([c["id"] for c in fastest.values()])
    for (user, exercise), check in fastest.items():
        rows[exercise]["speeds"].append(
            {"user_id": user, "ms": check["speed_ms"], **_speed(verdicts.get(check["id"], {}))}
        )

    kinds_seen: set[str] = set()
    ordered = []
    for exercise in exercises:
        row = rows.get(exercise)
        if row is None:
            continue
        for kind, users in row["stuck"].items():
            users.sort()
            kinds_seen.add(kind)
        row["times"].sort(key=lambda t: (t["seconds"], t["user_id"]))
        row["attempts"].sort(key=lambda a: (a["failed_before"], a["user_id"]))
        row["speeds"].sort(key=lambda s: (-(s["pct"] if s["pct"] is not None else -1.0), s["user_id"]))
        counts = [0] * len(BUCKETS)
        for a in row["attempts"]:
            counts[bucket_of(a["failed_before"])] += 1
        row["buckets"] = counts
        row["time_spread"] = spread(t["seconds"] for t in row["times"])
        row["speed_spread"] = spread(s["pct"] for s in row["speeds"] if s["pct"] is not None)
        row["unplaced"] = sum(1 for s in row["speeds"] if s["pct"] is None)
        ordered.append(row)
    order = {kind: i for i, kind in enumerate(FAILURE_KINDS)}
    kinds = sorted(kinds_seen, key=lambda k: (order.get(k, len(order)), k))
    return {
        "kinds": kinds,
        "buckets": [label for label, _low, _high in BUCKETS],
        "exercises": ordered,
        "learners": learners,
    }


def learners_of(insights: dict, exercise: str, kind: str | None) -> list[int]:
    """The learners behind a picture's cell, ids sorted: `kind` a failure kind (or NO_KIND): the heat map's
    cell; "*": every learner stuck on the exercise; None: every learner who checked it."""
    row = next((r for r in insights["exercises"] if r["id"] == exercise), None)
    if row is None:
        return []
    stuck = sorted(u for users in row["stuck"].values() for u in users)
    if kind == "*":
        return stuck
    if kind is not None:
        return list(row["stuck"].get(kind, []))
    return sorted({*stuck, *(tm["user_id"] for tm in row["times"])})


def learner_details(db: ClassroomDB, course: Course, exercise: str, user_ids: list[int]) -> list[dict]:
    """The learners of a drill-down, each with their checks of `exercise` (count, passed), their latest
    failure (kind, message, where: from the stored verdict) and their code as it is now."""
    ex = course.exercise(exercise)
    history = [r for r in db.attempt_history() if r["exercise"] == exercise and r["user_id"] in set(user_ids)]
    last_failed = {}
    counts: dict[int, int] = {}
    passed: set[int] = set()
    for row in history:
        counts[row["user_id"]] = counts.get(row["user_id"], 0) + 1
        if row["passed"]:
            passed.add(row["user_id"])
        else:
            last_failed[row["user_id"]] = row
    verdicts = db.verdicts([r["id"] for r in last_failed.values()])
    out = []
    for user_id in user_ids:
        user = db.user_by_id(user_id)
        if user is None:
            continue
        failure = None
        if user_id in last_failed:
            row = last_failed[user_id]
            failures = verdicts.get(row["id"], {}).get("failures") or []
            first = failures[0] if failures and isinstance(failures[0], dict) else {}
            failure = {
                "kind": row["failure_kind"] or NO_KIND,
                "message": str(first.get("message", ""))[:2000],
                "where": str(first.get("where", ""))[:500],
                "case": str(first.get("case", ""))[:500],
                "at": row["at"],
            }
        text, version = db.code(user_id, course).read(ex)
        out.append(
            {
                "user": user,
                "checks": counts.get(user_id, 0),
                "passed": user_id in passed,
                "failure": failure,
                "code": text,
                "version": version,
            }
        )
    return out
