"""`tritonlab classroom restore FILE`: a backup written by store/backup.py into an empty classroom database.

All or nothing: the rows go in inside one transaction, checked against the file's own counts before it commits,
so a truncated or damaged file leaves the database as it was. See store/backup.py for the format and the rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from tritonlab.store.backup import (
    BATCH,
    BackupError,
    Progress,
    data_tables,
    decode_value,
    read_header,
    read_lines,
    revision_of,
)
from tritonlab.store.database import make_engine, redact, upgrade


def restore(url: str, path: Path, force: bool = False, progress: Progress | None = None) -> dict:
    """Restore the backup at `path` into the database at `url`; returns the revision restored, the revision the
    database was upgraded to, and the rows per table."""
    path = Path(path)
    header = read_header(path)
    revision = header["schema_revision"]
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            current = revision_of(conn)
            others = [t.name for t in data_tables(conn)]
        if current is None and others:
            raise BackupError(
                f"{redact(url)} holds tables ({', '.join(others[:5])}) but no classroom schema: restore into an "
                "empty database"
            )
        if current is not None and current != revision:
            raise BackupError(
                f"{redact(url)} is at schema revision {current} and the backup at {revision}: restore into a new, "
                "empty database (it is brought to the backup's revision, filled, then upgraded)"
            )
        if current is None:
            upgrade(engine, None, target=revision)
        try:
            with engine.begin() as conn:
                counts = _fill(conn, path, header, url, force, progress)
        except sa.exc.DBAPIError as exc:  # a row the schema refuses: a damaged or edited file
            raise BackupError(
                f"{path} does not fit {redact(url)}: {exc.orig}; nothing was restored"
            ) from None
        upgrade(engine, None)
        with engine.connect() as conn:
            now = revision_of(conn)
    finally:
        engine.dispose()
    return {"schema_revision": revision, "upgraded_to": now, "rows": counts, "database": redact(url)}


def _fill(
    conn: Connection, path: Path, header: dict, url: str, force: bool, progress: Progress | None
) -> dict:
    tables = {t.name: t for t in data_tables(conn)}
    held = {
        name: n
        for name, t in tables.items()
        if (n := conn.execute(sa.select(sa.func.count()).select_from(t)).scalar())
    }
    if held and not force:
        listed = ", ".join(f"{name} ({n} rows)" for name, n in held.items())
        raise BackupError(
            f"{redact(url)} is not empty: {listed}. Restore into an empty database, or pass --force to replace "
            "everything it holds"
        )
    for table in reversed(list(tables.values())):  # children first
        conn.execute(table.delete())
    counts: dict[str, int] = {}
    ended = False
    lines = read_lines(path)
    next(lines)  # the header, read and checked already
    for number, item in lines:
        if ended:
            raise BackupError(f"{path}: line {number} follows the end of the backup; the file is damaged")
        if isinstance(item, dict) and "table" in item:
            name = item["table"]
            counts[name] = _fill_table(conn, path, tables, item, lines, number)
            if progress is not None:
                progress(name, counts[name])
        elif isinstance(item, dict) and item.get("end") is True:
            if item.get("rows") != counts or list(counts) != header.get("tables"):
                raise BackupError(
                    f"{path}: the tables read do not match the backup's own list; the file is damaged"
                )
            ended = True
        else:
            raise BackupError(f"{path}: line {number} is neither a table nor the end; the file is damaged")
    if not ended:
        raise BackupError(f"{path} ends before its last line: the backup is incomplete; nothing was restored")
    if conn.dialect.name == "postgresql":
        _move_sequences(conn, tables.values())
    return counts


def _fill_table(
    conn: Connection,
    path: Path,
    tables: dict[str, sa.Table],
    item: dict,
    lines: Iterator[tuple[int, Any]],
    at: int,
) -> int:
    name, columns = item.get("table"), item.get("columns")
    table = tables.get(name)  # type: ignore[arg-type]
    if table is None:
        raise BackupError(f"{path}: line {at} names a table {name!r} this database does not have")
    if not isinstance(columns, list) or not columns or any(c not in table.columns for c in columns):
        raise BackupError(f"{path}: line {at}: the columns of {name} do not match this database's")
    cols = [table.columns[c] for c in columns]
    batch: list[dict] = []
    rows = 0
    for number, row in lines:
        if isinstance(row, dict):
            if row.get("end_table") != name or row.get("rows") != rows:
                raise BackupError(
                    f"{path}: line {number}: {name} ends with a wrong row count; the file is damaged"
                )
            if batch:
                conn.execute(table.insert(), batch)
            return rows
        if not isinstance(row, list) or len(row) != len(cols):
            raise BackupError(f"{path}: line {number} is not a row of {name}; the file is damaged")
        where = f"{path}: line {number}"
        batch.append({c.name: decode_value(v, c, where) for c, v in zip(cols, row, strict=True)})
        rows += 1
        if len(batch) >= BATCH:
            conn.execute(table.insert(), batch)
            batch.clear()
    raise BackupError(f"{path} ends inside table {name}: the backup is incomplete; nothing was restored")


def _move_sequences(conn: Connection, tables: Any) -> None:
    """PostgreSQL: each serial/identity column's sequence continues after the largest restored id."""
    for table in tables:
        for column in table.primary_key.columns:
            if not isinstance(column.type, sa.Integer):
                continue
            sequence = conn.execute(
                sa.text("SELECT pg_get_serial_sequence(:t, :c)"), {"t": table.name, "c": column.name}
            ).scalar()
            if sequence:
                largest = conn.execute(sa.select(sa.func.max(column))).scalar() or 0
                conn.execute(sa.text("SELECT setval(:s, :v, false)"), {"s": sequence, "v": int(largest) + 1})


__all__ = ["BackupError", "restore"]
