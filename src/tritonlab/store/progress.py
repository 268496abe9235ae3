"""The progress store: one SQLite file (WAL, synchronous=FULL) shared by the CLI and the web server.

An attempt is acknowledged once `record_attempt` returns: the transaction has been committed with
synchronous=FULL, so it survives the process being killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tritonlab import config
from tritonlab.store.disk import DiskFull, is_full

# Each entry moves the schema from version i to i+1. Never edit a shipped entry; append a new one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE attempts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        exercise TEXT NOT NULL,
        at REAL NOT NULL,
        backend TEXT NOT NULL,
        passed INTEGER NOT NULL,
        duration_s REAL NOT NULL,
        seed INTEGER,
        verdict TEXT NOT NULL
    );
    CREATE INDEX attempts_by_exercise ON attempts(exercise, at);
    CREATE TABLE hints_shown (
        exercise TEXT NOT NULL,
        hint_index INTEGER NOT NULL,
        at REAL NOT NULL,
        PRIMARY KEY (exercise, hint_index)
    );
    CREATE TABLE quiz_answers (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        lesson TEXT NOT NULL,
        question TEXT NOT NULL,
        answer TEXT NOT NULL,
        score REAL NOT NULL,
        at REAL NOT NULL
    );
    CREATE TABLE quiz_results (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        lesson TEXT NOT NULL,
        score REAL NOT NULL,
        passed INTEGER NOT NULL,
        at REAL NOT NULL
    );
    CREATE TABLE state (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
)


def no_room(folder: Path, below: int = 1 << 20) -> bool:
    """Is the file system holding `folder` (nearly) full? (SQLite needs room for its -wal/-shm files to read.)"""
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < below or st.f_favail == 0


def damage(path: Path) -> str | None:
    """Why the database at `path` cannot be trusted (0 bytes, not SQLite, quick_check fails), or None."""
    if not path.exists():
        return None
    wal = path.with_name(path.name + "-wal")
    if path.stat().st_size == 0:
        if wal.exists() and wal.stat().st_size > 0:
            return None  # a database being created right now: its pages are still in the WAL
        return "it is empty (0 bytes)"
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            rows = db.execute("PRAGMA quick_check").fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        if is_full(exc) and no_room(path.parent):  # it could not even be read: the disk, not the database
            raise DiskFull(28, f"the disk is full ({exc}); the database was not checked or changed") from exc
        return f"it is not a readable SQLite database ({exc})"
    problems = [row[0] for row in rows if row[0] != "ok"]
    return f"quick_check found: {'; '.join(problems[:3])}" if problems else None


def set_aside(path: Path, why: str) -> Path:
    """Rename a damaged database (and its WAL/SHM files) with a timestamp; say so on stderr."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.damaged-{stamp}-{os.getpid()}")
    os.replace(path, aside)
    for suffix in ("-wal", "-shm"):
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            os.replace(extra, aside.with_name(aside.name + suffix))
    print(
        f"tritonlab: the progress database {path} could not be used: {why}. It was moved aside to {aside} "
        "(nothing was deleted) and a fresh, empty one was started.",
        file=sys.stderr,
    )
    return aside


class Store:
    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else config.database_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.damaged: str | None = damage(self.path)  # why an earlier database was set aside, if it was
        self.set_aside: Path | None = set_aside(self.path, self.damaged) if self.damaged else None
        new = not self.path.exists()
        try:
            with self._connect() as db:
                self._migrate(db)
        except DiskFull:
            if new:  # the database this call began on a full disk: no empty file left to be taken as damage
                for suffix in ("", "-wal", "-shm"):
                    self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            raise

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA busy_timeout=30000")
            yield db
        except (sqlite3.OperationalError, OSError) as exc:
            if is_full(exc):  # the statement failed whole: nothing was recorded
                raise DiskFull(28, f"the disk is full ({exc}); nothing was recorded") from exc
            raise
        finally:
            db.close()

    def _migrate(self, db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise RuntimeError(
                f"{self.path} was written by a newer tritonlab (schema {version}); upgrade tritonlab to read it"
            )
        for number in range(version, len(MIGRATIONS)):
            try:
                db.executescript(
                    f"BEGIN IMMEDIATE; {MIGRATIONS[number]}; PRAGMA user_version={number + 1}; COMMIT;"
                )
            except Exception:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    @property
    def schema_version(self) -> int:
        with self._connect() as db:
            return db.execute("PRAGMA user_version").fetchone()[0]

    # ---- writes -----------------------------------------------------------------------------------

    def record_attempt(self, verdict: dict) -> int:
        """Store one check's verdict (the JSON form); returns the attempt id once it is durable."""
        with self._connect() as db:
            cur = db.execute(
                "INSERT INTO attempts (exercise, at, backend, passed, duration_s, seed, verdict)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    verdict["exercise"],
                    time.time(),
                    verdict.get("backend", "?"),
                    int(bool(verdict.get("passed"))),
                    float(verdict.get("duration_s", 0.0)),
                    verdict.get("seed"),
                    json.dumps(verdict),
                ),
            )
            return int(cur.lastrowid)

    def add_speed(self, attempt: int, verdict: dict) -> None:
        """The verdict of a saved attempt once its speed was measured (a passing GPU check is timed after its
        attempt was saved and shown: Service.check); only the verdict JSON changes."""
        with self._connect() as db:
            db.execute("UPDATE attempts SET verdict = ? WHERE id = ?", (json.dumps(verdict), int(attempt)))

    def record_hint(self, exercise: str, hint_index: int) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT OR IGNORE INTO hints_shown (exercise, hint_index, at) VALUES (?, ?, ?)",
                (exercise, hint_index, time.time()),
            )

    def record_quiz_answer(self, lesson: str, question: str, answer: str, score: float) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT INTO quiz_answers (lesson, question, answer, score, at) VALUES (?, ?, ?, ?, ?)",
                (lesson, question, answer, float(score), time.time()),
            )

    def record_quiz_result(self, lesson: str, score: float, passed: bool) -> None:
        with self._connect() as db:
            db.execute(
                "INSERT INTO quiz_results (lesson, score, passed, at) VALUES (?, ?, ?, ?)",
                (lesson, float(score), int(passed), time.time()),
            )

    def set_state(self, key: str, value: str) -> None:
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO state (key, value) VALUES (?, ?)", (key, value))

    # ---- reads ------------------------------------------------------------------------------------

    def get_state(self, key: str, default: str | None = None) -> str | None:
        with self._connect() as db:
            row = db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def passed_exercises(self) -> set[str]:
        with self._connect() as db:
            rows = db.execute("SELECT DISTINCT exercise FROM attempts WHERE passed = 1").fetchall()
        return {r[0] for r in rows}

    def attempts(self, exercise: str | None = None) -> list[dict]:
        query = "SELECT id, exercise, at, backend, passed, duration_s, seed FROM attempts"
        args: tuple = ()
        if exercise:
            query += " WHERE exercise = ?"
            args = (exercise,)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY id", args).fetchall()
        keys = ("id", "exercise", "at", "backend", "passed", "duration_s", "seed")
        return [dict(zip(keys, row, strict=True)) | {"passed": bool(row[4])} for row in rows]

    def hints_shown(self, exercise: str) -> int:
        with self._connect() as db:
            row = db.execute("SELECT COUNT(*) FROM hints_shown WHERE exercise = ?", (exercise,)).fetchone()
        return int(row[0])

    def best_quiz(self) -> dict[str, dict]:
        """lesson id -> {"score": best score, "passed": ever passed, "tries": count}."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT lesson, MAX(score), MAX(passed), COUNT(*) FROM quiz_results GROUP BY lesson"
            ).fetchall()
        return {r[0]: {"score": r[1], "passed": bool(r[2]), "tries": r[3]} for r in rows}

    def integrity_ok(self) -> bool:
        with self._connect() as db:
            return db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
