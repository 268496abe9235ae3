"""One learner's progress in the classroom database: attempts (with a passing GPU check's speed, for the
leaderboard), hints seen, quiz answers and results, and small per-learner state — the interface of the
single-user progress store (`store.progress.Store`), for one learner of a class.

Isolation: a `LearnerStore` is bound to one user id when made, and every statement it runs filters on it;
nothing here takes a user id from a request.
"""

from __future__ import annotations

import json
import time
from typing import Any

import sqlalchemy as sa

from tritonlab.store import schema as s
from tritonlab.store.database import Database
from tritonlab.store.leaderboard import speed_fields


def _failure_kind(verdict: dict) -> str | None:
    failures = verdict.get("failures") or []
    return failures[0].get("kind") if failures and isinstance(failures[0], dict) else None


class LearnerStore:
    """The progress store's interface (`store.progress.Store`), for one learner of the classroom database."""

    def __init__(self, db: Database, user_id: int) -> None:
        self.db, self.user_id = db, int(user_id)

    def _begin(self) -> Any:
        return self.db.engine.begin()

    def record_attempt(self, verdict: dict) -> int:
        with self._begin() as db:
            result = db.execute(
                s.attempts.insert().values(
                    user_id=self.user_id,
                    exercise=verdict["exercise"],
                    at=time.time(),
                    backend=verdict.get("backend", "?"),
                    passed=bool(verdict.get("passed")),
                    duration_s=float(verdict.get("duration_s", 0.0)),
                    seed=verdict.get("seed"),
                    failure_kind=_failure_kind(verdict),
                    verdict=json.dumps(verdict),
                    **speed_fields(verdict),  # a passing GPU check's measured time, for the leaderboard
                )
            )
            return int(result.inserted_primary_key[0])

    def add_speed(self, attempt: int, verdict: dict) -> None:
        """This learner's saved attempt once its speed was measured (timed after it was saved and shown:
        Service.check): its verdict JSON and the leaderboard's speed columns."""
        a = s.attempts
        with self._begin() as db:
            db.execute(
                a.update()
                .where(a.c.id == int(attempt), a.c.user_id == self.user_id)
                .values(verdict=json.dumps(verdict), **speed_fields(verdict))
            )

    def record_hint(self, exercise: str, hint_index: int) -> None:
        with self._begin() as db:
            h = s.hints
            seen = db.execute(
                sa.select(h.c.at).where(
                    h.c.user_id == self.user_id, h.c.exercise == exercise, h.c.hint_index == hint_index
                )
            ).first()
            if seen is None:
                db.execute(
                    h.insert().values(
                        user_id=self.user_id, exercise=exercise, hint_index=hint_index, at=time.time()
                    )
                )

    def record_quiz_answer(self, lesson: str, question: str, answer: str, score: float) -> None:
        with self._begin() as db:
            db.execute(
                s.quiz_answers.insert().values(
                    user_id=self.user_id,
                    lesson=lesson,
                    question=question,
                    answer=answer,
                    score=float(score),
                    at=time.time(),
                )
            )

    def record_quiz_result(self, lesson: str, score: float, passed: bool) -> None:
        with self._begin() as db:
            db.execute(
                s.quiz_results.insert().values(
                    user_id=self.user_id,
                    lesson=lesson,
                    score=float(score),
                    passed=bool(passed),
                    at=time.time(),
                )
            )

    def set_state(self, key: str, value: str) -> None:
        st = s.state
        with self._begin() as db:
            where = (st.c.user_id == self.user_id) & (st.c.key == key)
            if db.execute(sa.select(st.c.key).where(where)).first():
                db.execute(st.update().where(where).values(value=value))
            else:
                db.execute(st.insert().values(user_id=self.user_id, key=key, value=value))

    def get_state(self, key: str, default: str | None = None) -> str | None:
        st = s.state
        with self._begin() as db:
            value = db.execute(
                sa.select(st.c.value).where(st.c.user_id == self.user_id, st.c.key == key)
            ).scalar()
        return value if value is not None else default

    def passed_exercises(self) -> set[str]:
        a = s.attempts
        with self._begin() as db:
            rows = db.execute(
                sa.select(a.c.exercise).where(a.c.user_id == self.user_id, a.c.passed == sa.true()).distinct()
            ).fetchall()
        return {r[0] for r in rows}

    def attempts(self, exercise: str | None = None) -> list[dict]:
        a = s.attempts
        query = sa.select(
            a.c.id, a.c.exercise, a.c.at, a.c.backend, a.c.passed, a.c.duration_s, a.c.seed
        ).where(a.c.user_id == self.user_id)
        if exercise:
            query = query.where(a.c.exercise == exercise)
        with self._begin() as db:
            rows = db.execute(query.order_by(a.c.id)).fetchall()
        keys = ("id", "exercise", "at", "backend", "passed", "duration_s", "seed")
        return [dict(zip(keys, row, strict=True)) | {"passed": bool(row[4])} for row in rows]

    def hints_shown(self, exercise: str) -> int:
        h = s.hints
        with self._begin() as db:
            return int(
                db.execute(
                    sa.select(sa.func.count()).where(h.c.user_id == self.user_id, h.c.exercise == exercise)
                ).scalar()
                or 0
            )

    def best_quiz(self) -> dict[str, dict]:
        q = s.quiz_results
        with self._begin() as db:
            rows = db.execute(
                sa.select(
                    q.c.lesson,
                    sa.func.max(q.c.score),
                    sa.func.max(sa.case((q.c.passed, 1), else_=0)),
                    sa.func.count(),
                )
                .where(q.c.user_id == self.user_id)
                .group_by(q.c.lesson)
            ).fetchall()
        return {r[0]: {"score": r[1], "passed": bool(r[2]), "tries": r[3]} for r in rows}

    def integrity_ok(self) -> bool:
        return True
