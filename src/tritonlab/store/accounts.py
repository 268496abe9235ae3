"""The class and its accounts in the classroom database: the one class (its name and join link), the
server's settings (the cookie secret, the leaderboard switch), and the users (learner | teacher), their
password hashes and whether they are disabled. Changing a password or disabling a user ends their sessions.
"""

from __future__ import annotations

import re
import secrets
import time
import unicodedata
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from tritonlab.store import schema as s
from tritonlab.store.database import Database

ROLES = ("learner", "teacher")
USERNAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,31}$")
NAME_MAX = 200  # users.display_name and classes.name are String(200)


class AccountError(Exception):
    """A username taken, unknown or invalid; the message is for people."""


def check_name(text: str, what: str) -> str:
    """A display name or class name as stored: trimmed, at most NAME_MAX characters, no control characters (a
    NUL cannot be stored by PostgreSQL; a tab or newline would break the teacher's table and its CSV)."""
    text = text.strip()
    if len(text) > NAME_MAX:
        raise AccountError(f"{what} has at most {NAME_MAX} characters")
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in text):
        raise AccountError(f"{what} cannot contain control characters (tab, newline, NUL ...)")
    return text


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


def user_from_row(row: Any) -> User:
    """A `User` from a row holding the users table's columns."""
    return User(
        int(row.id),
        row.username,
        row.display_name,
        row.role,
        bool(row.disabled),
        row.password_hash is not None,
        getattr(row, "leaderboard_name", None),
    )


class Accounts(Database):
    """The class, the settings and the users of the classroom database (a part of `ClassroomDB`)."""

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

    def set_setting(self, key: str, value: str) -> None:
        """Store a setting (replacing it)."""
        with self.engine.begin() as db:
            done = db.execute(s.settings.update().where(s.settings.c.key == key).values(value=value))
            if not done.rowcount:
                db.execute(s.settings.insert().values(key=key, value=value))

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
        return user_from_row(row) if row else None

    def user_by_id(self, user_id: int) -> User | None:
        with self.engine.begin() as db:
            row = db.execute(sa.select(s.users).where(s.users.c.id == user_id)).first()
        return user_from_row(row) if row else None

    def password_hash(self, user_id: int) -> str | None:
        with self.engine.begin() as db:
            return db.execute(sa.select(s.users.c.password_hash).where(s.users.c.id == user_id)).scalar()

    def users(self) -> list[User]:
        with self.engine.begin() as db:
            rows = db.execute(sa.select(s.users).order_by(s.users.c.id)).fetchall()
        return [user_from_row(r) for r in rows]

    def set_password_hash(self, user_id: int, password_hash: str) -> None:
        with self.engine.begin() as db:
            db.execute(s.users.update().where(s.users.c.id == user_id).values(password_hash=password_hash))
            db.execute(s.sessions.delete().where(s.sessions.c.user_id == user_id))

    def set_disabled(self, user_id: int, disabled: bool) -> None:
        with self.engine.begin() as db:
            db.execute(s.users.update().where(s.users.c.id == user_id).values(disabled=disabled))
            if disabled:
                db.execute(s.sessions.delete().where(s.sessions.c.user_id == user_id))
