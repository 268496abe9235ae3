"""Back up and restore a class's database (what `tritonlab classroom backup|restore` calls): the database is
TRITONLAB_DATABASE_URL, else TRITONLAB_HOME/classroom.db, as everywhere else. The work is in store/backup.py
(consistent snapshot, the file format) and store/restore.py (all-or-nothing restore)."""

from __future__ import annotations

from pathlib import Path

from tritonlab.store.backup import BackupError, Progress, write
from tritonlab.store.database import database_url
from tritonlab.store.restore import restore as restore_into

__all__ = ["BackupError", "backup", "restore"]


def backup(path: Path, url: str | None = None, progress: Progress | None = None) -> dict:
    """Write the class's whole database to `path` (see store/backup.py); a summary of what was written."""
    return write(url or database_url(), path, progress)


def restore(
    path: Path, url: str | None = None, force: bool = False, progress: Progress | None = None
) -> dict:
    """Restore the backup at `path` into the class's database, which must be empty unless `force`."""
    return restore_into(url or database_url(), path, force=force, progress=progress)
