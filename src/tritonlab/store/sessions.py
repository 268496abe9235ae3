"""Log-in sessions and the log-in back-off counters in the classroom database.

A session row stores only the hash of its id (the cookie holds the id itself) and the session's CSRF token;
a session ends when it expires, after `idle_s` without a request, when its user is disabled, or at log-out.
The back-off counters count failed log-ins per (username, address); classroom/auth.py decides the wait.
"""

from __future__ import annotations

import hashlib
import secrets
import time

import sqlalchemy as sa

from tritonlab.store import schema as s
from tritonlab.store.accounts import User, user_from_row
from tritonlab.store.database import Database


class Sessions(Database):
    """Sessions and log-in back-off counters (a part of `ClassroomDB`)."""

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
        return user_from_row(row), row.csrf

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
