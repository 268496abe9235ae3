"""The classroom's opt-in speed leaderboard, stored beside the attempts it ranks (store/learner_progress.py).

What is ranked: per exercise, each opted-in learner's best (lowest) measured time of a *passing* check on the
GPU backend — the `speed` report the check path puts on the verdict (perf/bench_learner.speed_summary),
taken from the verdict when `LearnerStore.add_speed` puts it on the attempt saved before the timing run.
Learners appear only under a name they chose (`users.leaderboard_name`); a teacher can switch the whole board
off (setting `leaderboard`).

The time is measured inside the learner's own sandboxed process, so a determined learner could forge it; a
report claiming more than `MAX_PCT_OF_ROOF` of this GPU's measured roof is not ranked (docs/classroom.md).
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any

import sqlalchemy as sa

from tritonlab.store import schema as s

ClassroomDB = Any  # store/classroom.py's ClassroomDB (which imports this module, through learner_progress: no import back)

MAX_PCT_OF_ROOF = 110.0  # the roof is measured too; a little above it is noise, far above it is not real
NAME_MAX = 40
SETTING = "leaderboard"


class NameError_(ValueError):
    """A leaderboard name that cannot be used; the message is for people."""


def speed_fields(verdict: dict) -> dict[str, Any]:
    """{"speed_ms", "speed_gpu"} for the attempt row: set only for a passing GPU check with a plausible
    speed report, else both None."""
    none = {"speed_ms": None, "speed_gpu": None}
    speed = verdict.get("speed")
    if verdict.get("backend") != "gpu" or not verdict.get("passed") or not isinstance(speed, dict):
        return none
    ms = speed.get("ms")
    if "error" in speed or isinstance(ms, bool) or not isinstance(ms, (int, float)):
        return none
    if not math.isfinite(ms) or ms <= 0:
        return none
    pct = speed.get("pct_of_roof")
    if isinstance(pct, (int, float)) and (not math.isfinite(pct) or pct > MAX_PCT_OF_ROOF):
        return none
    gpu = speed.get("gpu")
    return {"speed_ms": float(ms), "speed_gpu": str(gpu)[:128] if gpu else None}


def clean_name(name: str | None) -> str | None:
    """A learner's chosen name: trimmed, 1-40 printable characters; None or "" leaves the board."""
    if name is None:
        return None
    name = unicodedata.normalize("NFC", name).strip()
    if not name:
        return None
    if len(name) > NAME_MAX:
        raise NameError_(f"a leaderboard name has at most {NAME_MAX} characters")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") for c in name):
        raise NameError_("a leaderboard name cannot contain control or invisible characters")
    return name


def enabled(db: ClassroomDB) -> bool:
    return db.setting(SETTING, lambda: "on") == "on"


def set_enabled(db: ClassroomDB, on: bool) -> None:
    with db.engine.begin() as conn:
        where = s.settings.c.key == SETTING
        if conn.execute(sa.select(s.settings.c.key).where(where)).first():
            conn.execute(s.settings.update().where(where).values(value="on" if on else "off"))
        else:
            conn.execute(s.settings.insert().values(key=SETTING, value="on" if on else "off"))


def set_name(db: ClassroomDB, user_id: int, name: str | None) -> str | None:
    """Join (a name), rename, or leave (None). Names are unique, compared without case."""
    name = clean_name(name)
    u = s.users
    with db.engine.begin() as conn:
        if name is not None:
            taken = conn.execute(
                sa.select(u.c.id).where(
                    sa.func.lower(u.c.leaderboard_name) == name.lower(), u.c.id != user_id
                )
            ).first()
            if taken:
                raise NameError_(f"the leaderboard name {name!r} is taken; choose another")
        conn.execute(u.update().where(u.c.id == user_id).values(leaderboard_name=name))
    return name


def name_of(db: ClassroomDB, user_id: int) -> str | None:
    with db.engine.begin() as conn:
        return conn.execute(sa.select(s.users.c.leaderboard_name).where(s.users.c.id == user_id)).scalar()


def board(db: ClassroomDB, exercises: list[str] | None = None, limit: int = 20) -> dict[str, list[dict]]:
    """{exercise: [{rank, name, ms, gpu, at}, ...]} best first, one row per opted-in, enabled learner."""
    a, u = s.attempts, s.users
    query = (
        sa.select(a.c.user_id, a.c.exercise, a.c.speed_ms, a.c.speed_gpu, a.c.at, u.c.leaderboard_name)
        .join(u, u.c.id == a.c.user_id)
        .where(
            a.c.passed == sa.true(),
            a.c.backend == "gpu",
            a.c.speed_ms.is_not(None),
            u.c.leaderboard_name.is_not(None),
            u.c.disabled == sa.false(),
            u.c.role == "learner",
        )
        .order_by(a.c.exercise, a.c.speed_ms, a.c.id)
    )
    if exercises is not None:
        query = query.where(a.c.exercise.in_(exercises))
    with db.engine.begin() as conn:
        rows = conn.execute(query).fetchall()
    out: dict[str, list[dict]] = {ex: [] for ex in exercises or []}
    seen: set[tuple[int, str]] = set()
    for r in rows:  # ordered by time: each learner's first row per exercise is their best
        entries = out.setdefault(r.exercise, [])
        if (r.user_id, r.exercise) in seen or len(entries) >= limit:
            continue
        seen.add((r.user_id, r.exercise))
        entries.append(
            {
                "rank": len(entries) + 1,
                "name": r.leaderboard_name,
                "ms": float(r.speed_ms),
                "gpu": r.speed_gpu,
                "at": float(r.at),
            }
        )
    return out
