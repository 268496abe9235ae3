"""The classroom database: accounts, sessions, the class, and every learner's attempts, hints, quiz answers,
state and code, through SQLAlchemy Core on SQLite (default) or PostgreSQL (`TRITONLAB_DATABASE_URL`).

Durability: a write is acknowledged only after its transaction committed. On SQLite every connection runs
with journal_mode=WAL, synchronous=FULL and foreign keys on, and every transaction starts with BEGIN
IMMEDIATE (a writer never fails half-way on a stale snapshot); PostgreSQL commits durably by default.

Isolation: `LearnerStore` and `LearnerCode` are bound to one user id when made, and every statement they run
filters on it; nothing here takes a user id from a request.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from tritonlab import config
from tritonlab.models import Course, Exercise
from tritonlab.store import code_backups
from tritonlab.store import schema as s
from tritonlab.store.leaderboard import speed_fields
from tritonlab.store.workspace import MAX_SOURCE_BYTES, ConflictError, WorkspaceError, version_of

ROLES = ("learner", "teacher")


class AccountError(Exception):
    """A username taken, unknown or invalid; the message is for people."""


def database_url() -> str:
    """TRITONLAB_DATABASE_URL, else a SQLite file beside the single-user progress file."""
    env = os.environ.get("TRITONLAB_DATABASE_URL", "").strip()
    if env:
        return env
    return f"sqlite:///{config.home() / 'classroom.db'}"


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparsable database URL>"


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = sa.engine.make_url(url).database
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return sa.create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def upgrade(engine: Engine, legacy_progress: Path | None = None, target: str = "head") -> None:
    """Bring the schema to the newest Alembic revision (or `target`). `legacy_progress`: a single-user
    progress file whose rows the first migration adopts (as the learner `local`)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        cfg.attributes["legacy_progress"] = str(legacy_progress) if legacy_progress else None
        command.upgrade(cfg, target)


def schema_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def _failure_kind(verdict: dict) -> str | None:
    failures = verdict.get("failures") or []
    return failures[0].get("kind") if failures and isinstance(failures[0], dict) else None


@dataclass(frozen=True)
class User:
    id: int
    username: str
    display_name: str
    role: str
    disabled: bool
    has_password: bool
    leaderboard_name: str | None = None

    @property
    def is_teacher(self) -> bool:
        return self.role == "teacher"

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "username": self.username,
            "display_name": self.display_name,
            "role": self.role,
            "disabled": self.disabled,
        }


def _user(row: Any) -> User:
    return User(
        int(row.id),
        row.username,
        row.display_name,
        row.role,
        bool(row.disabled),
        row.password_hash is not None,
        getattr(row, "leaderboard_name", None),
    )


class ClassroomDB:
    def __init__(self, url: str | None = None, legacy_progress: Path | None = None, migrate: bool = True):
        self.url = url or database_url()
        self.engine = make_engine(self.url)
        if migrate:
            upgrade(self.engine, legacy_progress)

    def close(self) -> None:
        self.engine.dispose()

    # ---- settings and the class ---------------------------------------------------------------------------

    def setting(self, key: str, make: Any = None) -> str | None:
        """A stored setting; with `make`, created (once, race-free) when missing."""
        with self.engine.begin() as db:
            row = db.execute(sa.select(s.settings.c.value).where(s.settings.c.key == key)).first()
            if row is None and make is not None:
                value = make()
                db.execute(s.settings.insert().values(key=key, value=value))
                return value
        return row[0] if row else None

    def secret(self) -> bytes:
        return bytes.fromhex(self.setting("cookie_secret", lambda: secrets.token_hex(32)) or "")

    def create_class(self, name: str) -> dict:
        with self.engine.begin() as db:
            if db.execute(sa.select(sa.func.count()).select_from(s.classes)).scalar():
                raise AccountError("this database already holds a class; one server serves one class")
            code = secrets.token_urlsafe(9)
            db.execute(
                s.classes.insert().values(name=name, join_code=code, join_open=True, created_at=time.time())
            )
        return self.the_class() or {}

    def the_class(self) -> dict | None:
        with self.engine.begin() as db:
            row = db.execute(sa.select(s.classes).order_by(s.classes.c.id)).first()
        if row is None:
            return None
        return {"id": row.id, "name": row.name, "join_code": row.join_code, "join_open": bool(row.join_open)}

    def set_join_open(self, open_: bool) -> None:
        with self.engine.begin() as db:
            db.execute(s.classes.update().values(join_open=open_))

    # ---- accounts -----------------------------------------------------------------------------------------

    def add_user(self, username: str, display_name: str, role: str, password_hash: str | None) -> User:
        if role not in ROLES:
            raise AccountError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        with self.engine.begin() as db:
            taken = db.execute(sa.select(s.users.c.id).where(s.users.c.username == username)).first()
            if taken:
                raise AccountError(f"the username {username!r} is taken")
            db.execute(
                s.users.insert().values(
                    username=username,
                    display_name=display_name or username,
                    role=role,
                    password_hash=password_hash,
                    disabled=False,
                    created_at=time.time(),
                )
            )
        user = self.user_by_name(username)
        assert user is not None
        return user

    def user_by_name(self, username: str) -> User | None:
        with self.engine.begin() as db:
            row = db.execute(sa.select(s.users).where(s.users.c.username == username)).first()
        return _user(row) if row else None

    def user_by_id(self, user_id: int) -> User | None:
        with self.engine.begin() as db:
            row = db.execute(sa.select(s.users).where(s.users.c.id == user_id)).first()
        return _user(row) if row else None

    def password_hash(self, user_id: int) -> str | None:
        with self.engine.begin() as db:
            return db.execute(sa.select(s.users.c.password_hash).where(s.users.c.id == user_id)).scalar()

    def users(self) -> list[User]:
        with self.engine.begin() as db:
            rows = db.execute(sa.select(s.users).order_by(s.users.c.id)).fetchall()
        return [_user(r) for r in rows]

    def set_password_hash(self, user_id: int, password_hash: str) -> None:
        with self.engine.begin() as db:
            db.execute(s.users.update().where(s.users.c.id == user_id).values(password_hash=password_hash))
            db.execute(s.sessions.delete().where(s.sessions.c.user_id == user_id))

    def set_disabled(self, user_id: int, disabled: bool) -> None:
        with self.engine.begin() as db:
            db.execute(s.users.update().where(s.users.c.id == user_id).values(disabled=disabled))
            if disabled:
                db.execute(s.sessions.delete().where(s.sessions.c.user_id == user_id))

    # ---- sessions -----------------------------------------------------------------------------------------

    @staticmethod
    def _hash(session_id: str) -> str:
        return hashlib.sha256(session_id.encode()).hexdigest()

    def create_session(self, user_id: int, lifetime_s: float) -> tuple[str, str]:
        """(session id for the cookie, csrf token). Only the id's hash is stored."""
        sid, csrf, now = secrets.token_urlsafe(32), secrets.token_urlsafe(24), time.time()
        with self.engine.begin() as db:
            db.execute(s.sessions.delete().where(s.sessions.c.expires_at < now))
            db.execute(
                s.sessions.insert().values(
                    id_hash=self._hash(sid),
                    user_id=user_id,
                    csrf=csrf,
                    created_at=now,
                    last_seen=now,
                    expires_at=now + lifetime_s,
                )
            )
        return sid, csrf

    def session(self, session_id: str, idle_s: float) -> tuple[User, str] | None:
        """(user, csrf) of a live session of an enabled user, else None. Idle sessions end after `idle_s`."""
        now = time.time()
        with self.engine.begin() as db:
            row = db.execute(
                sa.select(s.sessions.c.csrf, s.sessions.c.last_seen, s.sessions.c.expires_at, s.users)
                .join(s.users, s.users.c.id == s.sessions.c.user_id)
                .where(s.sessions.c.id_hash == self._hash(session_id))
            ).first()
            if row is None:
                return None
            if row.expires_at < now or now - row.last_seen > idle_s or row.disabled:
                db.execute(s.sessions.delete().where(s.sessions.c.id_hash == self._hash(session_id)))
                return None
            if now - row.last_seen > 60:  # keep writes rare: once a minute per session is enough
                db.execute(
                    s.sessions.update()
                    .where(s.sessions.c.id_hash == self._hash(session_id))
                    .values(last_seen=now)
                )
        return _user(row), row.csrf

    def end_session(self, session_id: str) -> None:
        with self.engine.begin() as db:
            db.execute(s.sessions.delete().where(s.sessions.c.id_hash == self._hash(session_id)))

    # ---- login back-off -----------------------------------------------------------------------------------

    def failures(self, username: str, address: str) -> tuple[int, float]:
        with self.engine.begin() as db:
            row = db.execute(
                sa.select(s.login_failures.c.failures, s.login_failures.c.last_at).where(
                    s.login_failures.c.username == username, s.login_failures.c.address == address
                )
            ).first()
        return (int(row[0]), float(row[1])) if row else (0, 0.0)

    def record_failure(self, username: str, address: str) -> int:
        now = time.time()
        with self.engine.begin() as db:
            where = (s.login_failures.c.username == username) & (s.login_failures.c.address == address)
            count = db.execute(sa.select(s.login_failures.c.failures).where(where)).scalar()
            if count is None:
                db.execute(
                    s.login_failures.insert().values(
                        username=username, address=address, failures=1, last_at=now
                    )
                )
                return 1
            db.execute(s.login_failures.update().where(where).values(failures=count + 1, last_at=now))
            return count + 1

    def clear_failures(self, username: str, address: str | None = None) -> None:
        with self.engine.begin() as db:
            where = s.login_failures.c.username == username
            if address is not None:
                where = where & (s.login_failures.c.address == address)
            db.execute(s.login_failures.delete().where(where))

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


class LearnerStore:
    """The progress store's interface (`store.progress.Store`), for one learner of the classroom database."""

    def __init__(self, db: ClassroomDB, user_id: int) -> None:
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


class LearnerCode:
    """One learner's code, kept in the database (the workspace's interface: read, save with conflicts,
    reset and backups). Runs need a file: `materialize` writes the stored text to a path only the server
    and the sandbox can reach (see docs/classroom.md, "What is isolated")."""

    def __init__(self, db: ClassroomDB, user_id: int, course: Course) -> None:
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
