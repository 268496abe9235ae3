"""The classroom database's engine: which database (`TRITONLAB_DATABASE_URL`, else a SQLite file in
`TRITONLAB_HOME`), how every connection is set up, and the Alembic migrations that bring its schema up to date.

Durability: a write is acknowledged only after its transaction committed. On SQLite every connection runs
with journal_mode=WAL, synchronous=FULL and foreign keys on, and every transaction starts with BEGIN
IMMEDIATE (a writer never fails half-way on a stale snapshot); PostgreSQL commits durably by default.

`Database` is the base the classroom database's parts share (store/accounts.py, store/sessions.py,
store/classroom.py): one engine, migrated when opened.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from tritonlab import config


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


class Database:
    """One engine on the classroom database, its schema brought to the newest revision when opened."""

    def __init__(self, url: str | None = None, legacy_progress: Path | None = None, migrate: bool = True):
        self.url = url or database_url()
        self.engine = make_engine(self.url)
        if migrate:
            upgrade(self.engine, legacy_progress)

    def close(self) -> None:
        self.engine.dispose()
