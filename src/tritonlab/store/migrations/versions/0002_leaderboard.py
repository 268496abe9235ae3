"""The opt-in speed leaderboard: a passing GPU check's measured time on its attempt row (`speed_ms`,
`speed_gpu`, filled from the verdict's `speed` report), and the name a learner chose to appear under
(`users.leaderboard_name`; NULL: not on the leaderboard). Existing attempts get their time from the verdict
JSON they already hold.

Never edit this file once shipped; add a new revision instead.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import json
import math

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def speed_of(verdict: dict) -> tuple[float | None, str | None]:
    """(ms, gpu) of a passing GPU check's speed report, else (None, None). Kept in step with
    store/leaderboard.py:speed_fields (a migration never imports the code it migrates for)."""
    speed = verdict.get("speed")
    if verdict.get("backend") != "gpu" or not verdict.get("passed") or not isinstance(speed, dict):
        return None, None
    ms = speed.get("ms")
    if "error" in speed or not isinstance(ms, (int, float)) or not math.isfinite(ms) or ms <= 0:
        return None, None
    return float(ms), str(speed.get("gpu") or "")[:128] or None


def upgrade() -> None:
    # Plain ADD COLUMN on both databases, never batch mode's copy-and-move: on SQLite with foreign keys on,
    # dropping the old `users` table would cascade to every learner row that points at it.
    op.add_column("learner_attempts", sa.Column("speed_ms", sa.Float, nullable=True))
    op.add_column("learner_attempts", sa.Column("speed_gpu", sa.String(128), nullable=True))
    op.add_column("users", sa.Column("leaderboard_name", sa.String(64), nullable=True))
    attempts = sa.table(
        "learner_attempts",
        sa.column("id", sa.Integer),
        sa.column("backend", sa.String),
        sa.column("passed", sa.Boolean),
        sa.column("verdict", sa.Text),
        sa.column("speed_ms", sa.Float),
        sa.column("speed_gpu", sa.String),
    )
    conn = op.get_bind()
    rows = conn.execute(
        sa.select(attempts.c.id, attempts.c.verdict).where(
            attempts.c.backend == "gpu", attempts.c.passed == sa.true()
        )
    ).fetchall()
    for row in rows:
        try:
            ms, gpu = speed_of(json.loads(row.verdict))
        except (ValueError, TypeError, AttributeError):
            continue
        if ms is not None:
            conn.execute(attempts.update().where(attempts.c.id == row.id).values(speed_ms=ms, speed_gpu=gpu))
    op.create_index("learner_attempts_speed", "learner_attempts", ["exercise", "speed_ms"])


def downgrade() -> None:
    op.drop_index("learner_attempts_speed", table_name="learner_attempts")
    for table, column in (
        ("users", "leaderboard_name"),
        ("learner_attempts", "speed_gpu"),
        ("learner_attempts", "speed_ms"),
    ):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")  # SQLite >= 3.35 and PostgreSQL, no copy
