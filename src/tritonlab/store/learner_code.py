"""One learner's code in the classroom database: the workspace's interface (read, save with conflicts,
reset, backups) over the `code` and `code_backups` tables, and `materialize`, which writes the stored text
to a file for a run.

Isolation: a `LearnerCode` is bound to one user id when made, and every statement it runs filters on it;
nothing here takes a user id from a request.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from tritonlab.models import Course, Exercise
from tritonlab.store import code_backups
from tritonlab.store import schema as s
from tritonlab.store.database import Database
from tritonlab.store.workspace import MAX_SOURCE_BYTES, ConflictError, WorkspaceError, version_of


def storable(text: str) -> None:
    """Refuse text with a NUL character: PostgreSQL cannot store one in a text column (SQLite could, but a class
    behaves the same on both), and Python refuses to run source that holds one."""
    if "\x00" in text:
        raise WorkspaceError(
            "the code holds a NUL character (\\x00), which Python cannot run and the class cannot store; "
            "remove it (nothing was saved)"
        )


class LearnerCode:
    """One learner's code, kept in the database (the workspace's interface: read, save with conflicts,
    reset and backups). Runs need a file: `materialize` writes the stored text to a path only the server
    and the sandbox can reach (see docs/classroom.md, "What is isolated")."""

    def __init__(self, db: Database, user_id: int, course: Course) -> None:
        self.db, self.user_id, self.course = db, int(user_id), course

    def _row(self, conn: Connection, exercise: Exercise) -> Any:
        return conn.execute(
            sa.select(s.code.c.text, s.code.c.version).where(
                s.code.c.user_id == self.user_id, s.code.c.exercise == exercise.id
            )
        ).first()

    def read(self, exercise: Exercise) -> tuple[str, str]:
        with self.db.engine.begin() as conn:
            row = self._row(conn, exercise)
        if row is None:
            text = exercise.starter.read_text(encoding="utf-8")
            return text, version_of(text)
        return row.text, row.version

    def save(self, exercise: Exercise, text: str, base_version: str | None, force: bool = False) -> str:
        if len(text.encode("utf-8")) > MAX_SOURCE_BYTES:
            raise WorkspaceError(f"the code is larger than {MAX_SOURCE_BYTES // 1024} KiB; nothing was saved")
        storable(text)
        version = version_of(text)
        label = Path(exercise.lesson_id) / f"{exercise.id}.py"
        with self.db.engine.begin() as conn:  # compare-and-write in one transaction
            row = self._row(conn, exercise)
            if row is None:
                stored = exercise.starter.read_text(encoding="utf-8")
                stored_version = version_of(stored)
            else:
                stored, stored_version = row.text, row.version
            if base_version and stored_version != base_version and stored != text:
                if not force:
                    raise ConflictError(label, stored, stored_version)
                self._backup(conn, exercise, stored, "overwritten")
            self._put(conn, exercise, text, version, exists=row is not None)
        return version

    def _put(self, conn: Connection, exercise: Exercise, text: str, version: str, exists: bool) -> None:
        values = {"text": text, "version": version, "updated_at": time.time()}
        if exists:
            conn.execute(
                s.code.update()
                .where(s.code.c.user_id == self.user_id, s.code.c.exercise == exercise.id)
                .values(**values)
            )
        else:
            conn.execute(s.code.insert().values(user_id=self.user_id, exercise=exercise.id, **values))

    def _backup(self, conn: Connection, exercise: Exercise, text: str, why: str) -> str:
        code_backups.keep(conn, self.user_id, exercise.id, why, text)  # bounded: size, rate, count, bytes
        return f"backup of {exercise.id} ({why}, {version_of(text)[:6]})"

    def backup(self, exercise: Exercise, text: str, why: str) -> str:
        storable(text)
        with self.db.engine.begin() as conn:
            return self._backup(conn, exercise, text, why)

    def reset(self, exercise: Exercise) -> str | None:
        starter = exercise.starter.read_text(encoding="utf-8")
        with self.db.engine.begin() as conn:
            row = self._row(conn, exercise)
            backup = self._backup(conn, exercise, row.text, "reset") if row is not None else None
            self._put(conn, exercise, starter, version_of(starter), exists=row is not None)
        return backup

    def backups(self, exercise: Exercise) -> list[dict]:
        b = s.code_backups
        with self.db.engine.begin() as conn:
            rows = conn.execute(
                sa.select(b.c.why, b.c.text, b.c.at)
                .where(b.c.user_id == self.user_id, b.c.exercise == exercise.id)
                .order_by(b.c.id)
            ).fetchall()
        return [{"why": r.why, "text": r.text, "at": r.at} for r in rows]

    def init(self) -> list[Path]:
        return []

    def materialize(self, exercise: Exercise, folder: Path) -> Path:
        """Write the stored text to folder/<lesson>/<exercise>.py (atomically) and return the path."""
        text, _ = self.read(exercise)
        target = folder / exercise.lesson_id / f"{exercise.id}.py"
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
        return target
