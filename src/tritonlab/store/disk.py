"""A full disk (ENOSPC, EDQUOT, SQLite's "database or disk is full") as one error type the interfaces can
answer with 507 Insufficient Storage. Whatever raised it changed nothing on disk."""

from __future__ import annotations

import errno
import sqlite3

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class DiskFull(OSError):
    """The server's disk (or quota) is full; the message says what was not saved."""


def is_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in FULL_ERRNOS:
        return True
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return "full" in text or "disk i/o error" in text
    return False
