"""Classroom tables: accounts, sessions, classes, and per-learner attempts, hints, quiz answers, state and
code. Adopts an existing single-user progress file: its rows become the learner `local` (no password: a
teacher sets one with `tritonlab classroom reset-password local`). The old file itself is only read.

Never edit this file once shipped; add a new revision instead.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import sqlalchemy as sa
from alembic import context, op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _user_fk() -> sa.Column:
    return sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    op.create_table(
        "classroom_settings",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "classes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("join_code", sa.String(64), nullable=False, unique=True),
        sa.Column("join_open", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("username", sa.String(64), nullable=False, unique=True),
        sa.Column("display_name", sa.String(200), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("password_hash", sa.Text),
        sa.Column("disabled", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        _user_fk(),
        sa.Column("csrf", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("last_seen", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_table(
        "login_failures",
        sa.Column("username", sa.String(64), primary_key=True),
        sa.Column("address", sa.String(64), primary_key=True),
        sa.Column("failures", sa.Integer, nullable=False),
        sa.Column("last_at", sa.Float, nullable=False),
    )
    op.create_table(
        "learner_attempts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _user_fk(),
        sa.Column("exercise", sa.String(128), nullable=False),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("backend", sa.String(32), nullable=False),
        sa.Column("passed", sa.Boolean, nullable=False),
        sa.Column("duration_s", sa.Float, nullable=False),
        sa.Column("seed", sa.BigInteger),
        sa.Column("failure_kind", sa.String(64)),
        sa.Column("verdict", sa.Text, nullable=False),
    )
    op.create_index("learner_attempts_by_user", "learner_attempts", ["user_id", "exercise", "at"])
    op.create_table(
        "learner_hints",
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("exercise", sa.String(128), primary_key=True),
        sa.Column("hint_index", sa.Integer, primary_key=True),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_table(
        "learner_quiz_answers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _user_fk(),
        sa.Column("lesson", sa.String(128), nullable=False),
        sa.Column("question", sa.String(128), nullable=False),
        sa.Column("answer", sa.Text, nullable=False),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_table(
        "learner_quiz_results",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _user_fk(),
        sa.Column("lesson", sa.String(128), nullable=False),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("passed", sa.Boolean, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_table(
        "learner_state",
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "learner_code",
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("exercise", sa.String(128), primary_key=True),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("version", sa.String(32), nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_table(
        "learner_code_backups",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _user_fk(),
        sa.Column("exercise", sa.String(128), nullable=False),
        sa.Column("why", sa.String(32), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    legacy = context.config.attributes.get("legacy_progress")
    if legacy:
        adopt(Path(legacy))


def _legacy_rows(path: Path) -> dict[str, list[tuple]] | None:
    """The single-user progress file's rows, read-only; None when there is none or it holds nothing."""
    if not path.is_file():
        return None
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "attempts" not in names:
            return None
        rows = {
            "attempts": db.execute(
                "SELECT exercise, at, backend, passed, duration_s, seed, verdict FROM attempts ORDER BY id"
            ).fetchall(),
            "hints": db.execute("SELECT exercise, hint_index, at FROM hints_shown").fetchall(),
            "answers": db.execute(
                "SELECT lesson, question, answer, score, at FROM quiz_answers ORDER BY id"
            ).fetchall(),
            "results": db.execute(
                "SELECT lesson, score, passed, at FROM quiz_results ORDER BY id"
            ).fetchall(),
            "state": db.execute("SELECT key, value FROM state").fetchall(),
        }
    finally:
        db.close()
    return rows if any(rows.values()) else None


def _kind(verdict: str) -> str | None:
    try:
        failures = json.loads(verdict).get("failures") or []
    except (ValueError, AttributeError):
        return None
    return failures[0].get("kind") if failures and isinstance(failures[0], dict) else None


def adopt(path: Path) -> None:
    rows = _legacy_rows(path)
    if rows is None:
        return
    bind = op.get_bind()
    meta = sa.MetaData()
    t = {
        name: sa.Table(name, meta, autoload_with=bind)
        for name in (
            "users",
            "learner_attempts",
            "learner_hints",
            "learner_quiz_answers",
            "learner_quiz_results",
            "learner_state",
        )
    }
    uid = bind.execute(
        t["users"]
        .insert()
        .values(
            username="local",
            display_name="Local learner (adopted progress)",
            role="learner",
            password_hash=None,
            disabled=False,
            created_at=time.time(),
        )
    ).inserted_primary_key[0]
    if rows["attempts"]:
        bind.execute(
            t["learner_attempts"].insert(),
            [
                {
                    "user_id": uid,
                    "exercise": ex,
                    "at": at,
                    "backend": be,
                    "passed": bool(p),
                    "duration_s": d,
                    "seed": seed,
                    "failure_kind": _kind(v),
                    "verdict": v,
                }
                for ex, at, be, p, d, seed, v in rows["attempts"]
            ],
        )
    if rows["hints"]:
        bind.execute(
            t["learner_hints"].insert(),
            [{"user_id": uid, "exercise": ex, "hint_index": i, "at": at} for ex, i, at in rows["hints"]],
        )
    if rows["answers"]:
        bind.execute(
            t["learner_quiz_answers"].insert(),
            [
                {"user_id": uid, "lesson": le, "question": q, "answer": a, "score": s, "at": at}
                for le, q, a, s, at in rows["answers"]
            ],
        )
    if rows["results"]:
        bind.execute(
            t["learner_quiz_results"].insert(),
            [
                {"user_id": uid, "lesson": le, "score": s, "passed": bool(p), "at": at}
                for le, s, p, at in rows["results"]
            ],
        )
    if rows["state"]:
        bind.execute(
            t["learner_state"].insert(), [{"user_id": uid, "key": k, "value": v} for k, v in rows["state"]]
        )


def downgrade() -> None:
    for name in (
        "learner_code_backups",
        "learner_code",
        "learner_state",
        "learner_quiz_results",
        "learner_quiz_answers",
        "learner_hints",
        "learner_attempts",
        "login_failures",
        "sessions",
        "users",
        "classes",
        "classroom_settings",
    ):
        op.drop_table(name)
