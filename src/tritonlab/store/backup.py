"""The whole classroom database as one file, and back: `tritonlab classroom backup FILE` / `restore FILE`.

Consistent while the server writes:
- SQLite: SQLite's online backup API copies the live file into a private snapshot in one step (a read
  transaction: in WAL mode the server's writers are not blocked), and the file is written from that copy.
- PostgreSQL: one REPEATABLE READ, READ ONLY transaction reads every table, so all of them come from the
  snapshot its first query took, whatever commits meanwhile.

The file (gzip-compressed JSON lines) is the same for both databases, so a class moves from SQLite to
PostgreSQL by a backup and a restore:

    {"format": "tritonlab-classroom-backup", "version": 1, "schema_revision": "0003", "tables": [...], ...}
    {"table": "users", "columns": ["id", "username", ...]}
    [1, "teacher", ...]                         one line per row, in primary-key order
    {"end_table": "users", "rows": 3}
    ...                                         every table in foreign-key order (alembic_version aside)
    {"end": true, "rows": {"users": 3, ...}}

Restore: into an empty database (a new SQLite file, a freshly created PostgreSQL database), which is first
brought to the backup's schema revision, filled in one transaction (all or nothing: a truncated or damaged
file leaves the database as it was), then upgraded to this tritonlab's newest revision. A database that holds
rows is refused unless forced (then its rows are deleted in the same transaction). A database at another
revision, or a backup made by a newer tritonlab (a revision this one does not know), is refused.
PostgreSQL's id sequences are moved past the restored ids.

The file holds password hashes, session hashes and the cookie secret: it is written with mode 0600.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import secrets
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.pool import NullPool

from tritonlab.store.database import redact

FORMAT = "tritonlab-classroom-backup"
VERSION = 1
NOT_DATA = {"alembic_version"}  # the revision travels in the header instead
MAX_LINE = 64 * 1024 * 1024  # a row holds at most a few MiB (code is capped at 512 KiB before JSON escapes)
BATCH = 500
Progress = Callable[[str, int], None]  # (table, rows) once each table is written or restored


class BackupError(Exception):
    """A backup or restore that cannot be done; the message says why and what to do."""


def migration_scripts() -> Any:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    return ScriptDirectory.from_config(cfg)


def revision_of(conn: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


def data_tables(conn: Connection) -> list[sa.Table]:
    """Every table of the database, found by reflection, parents before the tables that point at them."""
    meta = sa.MetaData()
    meta.reflect(conn)
    return [t for t in meta.sorted_tables if t.name not in NOT_DATA]


@contextmanager
def snapshot(url: str, scratch: Path) -> Iterator[Connection]:
    """A connection that sees one consistent state of the database at `url` (see the module's docstring)."""
    if url.startswith("sqlite"):
        path = sa.engine.make_url(url).database
        if not path or path == ":memory:" or not Path(path).is_file():
            raise BackupError(f"no classroom database at {redact(url)}: the file does not exist")
        copy = scratch / f".tritonlab-snapshot-{secrets.token_hex(6)}.db"
        source = sqlite3.connect(path, timeout=30)
        target = sqlite3.connect(copy)
        try:
            os.chmod(copy, 0o600)
            source.backup(target)  # pages=-1: every page in one step, under one read transaction
        finally:
            target.close()
            source.close()
        engine = sa.create_engine(f"sqlite:///{copy}", poolclass=NullPool)
        try:
            with engine.connect() as conn:
                yield conn
        finally:
            engine.dispose()
            for leftover in (copy, Path(f"{copy}-wal"), Path(f"{copy}-shm")):
                leftover.unlink(missing_ok=True)
        return
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn = conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
            with conn.begin():
                yield conn
    finally:
        engine.dispose()


def _encode(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, memoryview)):
        return {"bytes": base64.b64encode(bytes(value)).decode()}
    raise BackupError(f"{where} holds a {type(value).__name__}, which this backup format cannot hold")


def decode_value(value: Any, column: sa.Column, where: str) -> Any:
    if isinstance(value, dict) and set(value) == {"bytes"} and isinstance(value["bytes"], str):
        return base64.b64decode(value["bytes"], validate=True)
    if value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, (bool, int)):
        return bool(value) if isinstance(column.type, sa.Boolean) else value
    raise BackupError(f"{where}: a value of type {type(value).__name__} does not belong in a row")


def write(url: str, out: Path, progress: Progress | None = None) -> dict:
    """Write the database at `url` to `out` (atomically: a partial file never has that name). Returns a
    summary: revision, row counts per table, bytes."""
    out = Path(out)
    if out.is_dir():
        raise BackupError(f"{out} is a folder: give the backup file's name")
    if not out.parent.is_dir():
        raise BackupError(f"{out.parent} does not exist: create it first")
    part = out.with_name(f".{out.name}.{secrets.token_hex(4)}.part")
    counts: dict[str, int] = {}
    try:
        with snapshot(url, out.parent) as conn:
            revision = revision_of(conn)
            if revision is None:
                raise BackupError(f"{redact(url)} holds no classroom database (no schema revision)")
            tables = data_tables(conn)
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6) as zipped:
                header = {
                    "format": FORMAT,
                    "version": VERSION,
                    "schema_revision": revision,
                    "database": conn.dialect.name,
                    "made_at": time.time(),
                    "tables": [t.name for t in tables],
                }
                _line(zipped, header)
                for table in tables:
                    counts[table.name] = _write_table(conn, table, zipped)
                    if progress is not None:
                        progress(table.name, counts[table.name])
                _line(zipped, {"end": True, "rows": counts})
                zipped.close()
                raw.flush()
                os.fsync(raw.fileno())
        os.replace(part, out)
        _sync_folder(out.parent)
    finally:
        part.unlink(missing_ok=True)
    return {"file": str(out), "schema_revision": revision, "rows": counts, "bytes": out.stat().st_size}


def _write_table(conn: Connection, table: sa.Table, out: IO[bytes]) -> int:
    columns = list(table.columns)
    _line(out, {"table": table.name, "columns": [c.name for c in columns]})
    order = list(table.primary_key.columns) or columns
    rows = 0
    result = conn.execution_options(stream_results=True, yield_per=BATCH).execute(
        sa.select(*columns).order_by(*order)
    )
    for row in result:
        rows += 1
        _line(out, [_encode(v, f"{table.name}.{c.name}") for v, c in zip(row, columns, strict=True)])
    _line(out, {"end_table": table.name, "rows": rows})
    return rows


def _line(out: IO[bytes], item: object) -> None:
    out.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---- reading a backup ---------------------------------------------------------------------------------------


def read_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) of each line; BackupError for a file that is not a readable backup."""
    try:
        with gzip.open(path, "rb") as f:
            number = 0
            while True:
                raw = f.readline(MAX_LINE + 1)
                if not raw:
                    return
                number += 1
                if len(raw) > MAX_LINE:
                    raise BackupError(f"{path}: line {number} is longer than {MAX_LINE // 2**20} MiB")
                try:
                    yield number, json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    raise BackupError(
                        f"{path}: line {number} is not JSON ({exc}); the file is damaged"
                    ) from None
    except FileNotFoundError:
        raise BackupError(f"{path} does not exist") from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise BackupError(
            f"{path} is not a complete tritonlab backup (gzip: {exc}); the file is damaged"
        ) from None


def read_header(path: Path) -> dict:
    """The backup's header, checked: its format, version and schema revision."""
    lines = read_lines(path)
    try:
        first = next(lines, None)
    finally:
        lines.close()
    if first is None:
        raise BackupError(f"{path} is empty")
    header = first[1]
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise BackupError(f"{path} is not a tritonlab classroom backup")
    if header.get("version") != VERSION:
        raise BackupError(
            f"{path} is a backup of format version {header.get('version')!r}; this tritonlab reads version "
            f"{VERSION}: restore it with the tritonlab that made it"
        )
    revision = header.get("schema_revision")
    known = {r.revision for r in migration_scripts().walk_revisions()}
    if revision not in known:
        raise BackupError(
            f"{path} holds schema revision {revision!r}, which this tritonlab does not know (it knows "
            f"{', '.join(sorted(known))}): it was made by a newer tritonlab; upgrade tritonlab first"
        )
    return header
