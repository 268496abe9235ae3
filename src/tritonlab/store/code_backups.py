"""Bounds on the copies of a learner's code that the classroom database keeps (`learner_code_backups`).

A copy is kept when a learner resets an exercise, overwrites a newer version ("Keep mine"), or asks for one
(`POST /api/exercises/{id}/backup`, before loading the other version). Unbounded, a loop of those grew the
database by 17 MiB/s (issue 34). Now, per learner:

- a copy is at most MAX_BACKUP_BYTES (the size of code a save accepts); a larger one is refused (413);
- the same text as that exercise's newest copy is not stored again;
- at most PER_MINUTE copies in any 60 s; past that the action that would make one is refused (429, with the
  seconds to wait), as a whole: a refused reset leaves the code as it was;
- the newest PER_EXERCISE copies of each exercise are kept, and at most LEARNER_BYTES of copies in all: past
  either, the oldest go first. So one learner's copies take at most LEARNER_BYTES whatever they do, and
  pruning never touches another learner's rows.

PER_MINUTE x MAX_BACKUP_BYTES stays below LEARNER_BYTES and PER_MINUTE below PER_EXERCISE, so the copies of the
last minute, which the rate is counted from, are never the ones pruned.
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from tritonlab.store import schema as s
from tritonlab.store.workspace import MAX_SOURCE_BYTES, WorkspaceError

MAX_BACKUP_BYTES = MAX_SOURCE_BYTES
PER_MINUTE = 10
PER_EXERCISE = 20
LEARNER_BYTES = 8 * 1024 * 1024
WINDOW_S = 60.0


class BackupRefused(WorkspaceError):
    """A copy of the code was not kept, and the action that needed it was not done: `status` is 413 (too
    large) or 429 (too many in the last minute; `retry_after` seconds to wait)."""

    def __init__(self, message: str, status: int, retry_after: int = 0) -> None:
        super().__init__(message)
        self.status, self.retry_after = status, retry_after


def _bytes(conn: Connection, column: sa.ColumnElement) -> sa.ColumnElement:
    """The UTF-8 size of a text column, in SQL (SQLite's length() counts characters)."""
    if conn.dialect.name == "sqlite":
        return sa.func.length(sa.cast(column, sa.LargeBinary))
    return sa.func.octet_length(column)


def keep(conn: Connection, user_id: int, exercise: str, why: str, text: str) -> bool:
    """Keep a copy of `text` for this learner and exercise inside the caller's transaction, within the bounds
    above. False when it is the newest copy already (nothing stored). Raises BackupRefused."""
    size = len(text.encode("utf-8"))
    if size > MAX_BACKUP_BYTES:
        raise BackupRefused(
            f"this code is {size // 1024} KiB, more than the {MAX_BACKUP_BYTES // 1024} KiB a copy may hold; "
            "no copy was kept and nothing was changed",
            413,
        )
    b = s.code_backups
    mine = b.c.user_id == user_id
    newest = conn.execute(
        sa.select(b.c.text).where(mine, b.c.exercise == exercise).order_by(b.c.id.desc()).limit(1)
    ).scalar()
    if newest == text:
        return False
    now = time.time()
    recent = (
        conn.execute(sa.select(b.c.at).where(mine, b.c.at > now - WINDOW_S).order_by(b.c.at)).scalars().all()
    )
    if len(recent) >= PER_MINUTE:
        wait = max(1, int(recent[-PER_MINUTE] + WINDOW_S - now) + 1)
        raise BackupRefused(
            f"{PER_MINUTE} copies of your code were kept in the last minute, the most there may be: "
            f"wait {wait} s and try again (nothing was changed)",
            429,
            wait,
        )
    conn.execute(b.insert().values(user_id=user_id, exercise=exercise, why=why, text=text, at=now))
    _prune(conn, user_id, exercise)
    return True


def _prune(conn: Connection, user_id: int, exercise: str) -> None:
    b = s.code_backups
    mine = b.c.user_id == user_id
    extra = (
        conn.execute(
            sa.select(b.c.id)
            .where(mine, b.c.exercise == exercise)
            .order_by(b.c.id.desc())
            .offset(PER_EXERCISE)
        )
        .scalars()
        .all()
    )
    total, over = 0, list(extra)
    for row_id, size in conn.execute(
        sa.select(b.c.id, _bytes(conn, b.c.text)).where(mine, b.c.id.not_in(extra)).order_by(b.c.id.desc())
    ):
        total += int(size or 0)
        if total > LEARNER_BYTES:
            over.append(row_id)
    if over:
        conn.execute(b.delete().where(mine, b.c.id.in_(over)))


def usage(conn: Connection, user_id: int) -> dict:
    """This learner's copies: how many, and their bytes."""
    b = s.code_backups
    count, size = conn.execute(
        sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(_bytes(conn, b.c.text)), 0)).where(
            b.c.user_id == user_id
        )
    ).one()
    return {"copies": int(count), "bytes": int(size)}
