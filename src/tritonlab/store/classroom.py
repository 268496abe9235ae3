"""The classroom database: one object, `ClassroomDB`, over SQLAlchemy Core on SQLite (default) or PostgreSQL
(`TRITONLAB_DATABASE_URL`), made of the parts that each hold one concern:

- store/database.py: the engine, its durability settings and the migrations (`Database`);
- store/accounts.py: the class, the settings and the users (`Accounts`);
- store/sessions.py: log-in sessions and back-off counters (`Sessions`);
- store/learner_progress.py: one learner's attempts, hints, quiz answers and state (`LearnerStore`);
- store/learner_code.py: one learner's code (`LearnerCode`).

This module adds the views bound to one learner (`learner`, `code`) and the class-wide summaries the
teacher's matrix and pictures read (`summary`, `attempt_history`, `verdicts`).

Isolation: `LearnerStore` and `LearnerCode` are bound to one user id when made, and every statement they run
filters on it; nothing here takes a user id from a request.
"""

from __future__ import annotations

import json

import sqlalchemy as sa

from tritonlab.models import Course
from tritonlab.store import schema as s
from tritonlab.store.accounts import Accounts
from tritonlab.store.learner_code import LearnerCode
from tritonlab.store.learner_progress import LearnerStore
from tritonlab.store.sessions import Sessions


class ClassroomDB(Accounts, Sessions):
    """The classroom database: `Database`'s engine, `Accounts`, `Sessions`, and the per-learner views."""

    # ---- per-learner views and the class-wide summaries ------------------------------------------------------

    def learner(self, user_id: int) -> LearnerStore:
        return LearnerStore(self, user_id)

    def code(self, user_id: int, course: Course) -> LearnerCode:
        return LearnerCode(self, user_id, course)

    def summary(self) -> list[dict]:
        """One row per (learner, exercise) with attempts: count, passed, last activity, last failure kind."""
        a = s.attempts
        with self.engine.begin() as db:
            rows = db.execute(
                sa.select(
                    a.c.user_id,
                    a.c.exercise,
                    sa.func.count(),
                    sa.func.max(sa.case((a.c.passed, 1), else_=0)),
                    sa.func.max(a.c.at),
                ).group_by(a.c.user_id, a.c.exercise)
            ).fetchall()
            last_fail = {}
            for r in db.execute(
                sa.select(a.c.user_id, a.c.exercise, a.c.failure_kind)
                .where(a.c.passed == sa.false())
                .order_by(a.c.id)
            ):
                last_fail[(r.user_id, r.exercise)] = r.failure_kind
        return [
            {
                "user_id": r[0],
                "exercise": r[1],
                "attempts": int(r[2]),
                "passed": bool(r[3]),
                "last_at": float(r[4]),
                "last_failure": last_fail.get((r[0], r[1])),
            }
            for r in rows
        ]

    def last_activity(self) -> dict[int, float]:
        with self.engine.begin() as db:
            rows = db.execute(
                sa.select(s.attempts.c.user_id, sa.func.max(s.attempts.c.at)).group_by(s.attempts.c.user_id)
            ).fetchall()
            code_rows = db.execute(
                sa.select(s.code.c.user_id, sa.func.max(s.code.c.updated_at)).group_by(s.code.c.user_id)
            ).fetchall()
        out: dict[int, float] = {}
        for uid, at in [*rows, *code_rows]:
            out[int(uid)] = max(out.get(int(uid), 0.0), float(at))
        return out

    def attempt_history(self) -> list[dict]:
        """Every check of every enabled learner, oldest first (by id: the order they were saved), as the
        teacher's pictures read them: who, which exercise, when, passed, the first failure's kind, the speed
        of a passing GPU check. The verdicts themselves are read apart (`verdicts`), only where needed."""
        a, u = s.attempts, s.users
        query = (
            sa.select(a.c.id, a.c.user_id, a.c.exercise, a.c.at, a.c.passed, a.c.failure_kind, a.c.speed_ms)
            .join(u, u.c.id == a.c.user_id)
            .where(u.c.role == "learner", u.c.disabled == sa.false())
            .order_by(a.c.id)
        )
        with self.engine.begin() as db:
            rows = db.execute(query).fetchall()
        return [
            {
                "id": int(r.id),
                "user_id": int(r.user_id),
                "exercise": r.exercise,
                "at": float(r.at),
                "passed": bool(r.passed),
                "failure_kind": r.failure_kind,
                "speed_ms": None if r.speed_ms is None else float(r.speed_ms),
            }
            for r in rows
        ]

    def verdicts(self, attempt_ids: list[int]) -> dict[int, dict]:
        """The stored verdict of each attempt id (a verdict that does not parse reads as {})."""
        out: dict[int, dict] = {}
        ids = sorted({int(i) for i in attempt_ids})
        with self.engine.begin() as db:
            for start in range(0, len(ids), 500):  # bounded IN lists
                chunk = ids[start : start + 500]
                for r in db.execute(
                    sa.select(s.attempts.c.id, s.attempts.c.verdict).where(s.attempts.c.id.in_(chunk))
                ):
                    try:
                        data = json.loads(r.verdict)
                    except ValueError:
                        data = {}
                    out[int(r.id)] = data if isinstance(data, dict) else {}
        return out
