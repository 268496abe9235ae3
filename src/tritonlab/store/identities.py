"""Who a provider's account is in the class: the roster's e-mail addresses, the OpenID accounts linked to users,
and the log-ins sent to the provider and not back yet (docs/classroom.md, "Single sign-on").

- `users.email` (unique, lower case) is what a teacher's roster says; a provider's verified e-mail matches it
  on that person's first provider log-in.
- `user_identities` links (issuer, subject) — the provider's own, never-reused name for an account — to a user;
  after the first log-in only that link counts, never the e-mail again.
- `sso_pending` holds what the callback must check (the nonce, the PKCE verifier, the browser it started in)
  under the hash of the `state` sent to the provider; `take_pending` deletes the row as it reads it, so a
  state works once.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from tritonlab.store import schema as s
from tritonlab.store.accounts import AccountError, User
from tritonlab.store.classroom import ClassroomDB

LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
DOMAIN = re.compile(rf"^(?:{LABEL}\.)+{LABEL}$")
EMAIL = re.compile(rf"^[^@\s\x00-\x1f\x7f]{{1,64}}@(?:{LABEL}\.)+{LABEL}$")
MAX_PENDING = 10_000  # log-ins in flight at once, class-wide; beyond it the oldest make room


def normal_email(email: str) -> str:
    """The address in lower case, or AccountError when it is not one."""
    value = email.strip().lower()
    if len(value) > 254 or not EMAIL.match(value):
        raise AccountError(f"{email[:80]!r} is not an e-mail address")
    return value


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


# ---- the roster's e-mail ---------------------------------------------------------------------------------------


def set_email(db: ClassroomDB, user_id: int, email: str | None) -> str | None:
    """Give a user the roster e-mail `email` (None: none); AccountError when another user has it."""
    value = normal_email(email) if email else None
    with db.engine.begin() as conn:
        if value is not None:
            other = conn.execute(
                sa.select(s.users.c.username).where(s.users.c.email == value, s.users.c.id != user_id)
            ).first()
            if other:
                raise AccountError(f"the e-mail {value} already belongs to {other.username}")
        conn.execute(s.users.update().where(s.users.c.id == user_id).values(email=value))
    return value


def email_of(db: ClassroomDB, user_id: int) -> str | None:
    with db.engine.begin() as conn:
        return conn.execute(sa.select(s.users.c.email).where(s.users.c.id == user_id)).scalar()


def user_by_email(db: ClassroomDB, email: str) -> User | None:
    with db.engine.begin() as conn:
        found = conn.execute(sa.select(s.users.c.id).where(s.users.c.email == normal_email(email))).scalar()
    return db.user_by_id(found) if found is not None else None


# ---- linked provider accounts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    user: User
    teacher_by_provider: bool


def linked(db: ClassroomDB, issuer: str, subject: str) -> Link | None:
    i = s.identities
    with db.engine.begin() as conn:
        row = conn.execute(
            sa.select(i.c.user_id, i.c.teacher_by_provider).where(
                i.c.issuer == issuer, i.c.subject == subject
            )
        ).first()
    user = db.user_by_id(row.user_id) if row else None
    return Link(user, bool(row.teacher_by_provider)) if row and user else None


def subject_of(db: ClassroomDB, user_id: int, issuer: str) -> str | None:
    """The subject this user is already linked to at `issuer`, if any."""
    i = s.identities
    with db.engine.begin() as conn:
        return conn.execute(
            sa.select(i.c.subject).where(i.c.user_id == user_id, i.c.issuer == issuer)
        ).scalar()


def link(db: ClassroomDB, user_id: int, issuer: str, subject: str, email: str | None) -> None:
    now = time.time()
    with db.engine.begin() as conn:
        conn.execute(
            s.identities.insert().values(
                issuer=issuer,
                subject=subject,
                user_id=user_id,
                email=email,
                teacher_by_provider=False,
                created_at=now,
                last_login_at=now,
            )
        )


def logged_in(db: ClassroomDB, issuer: str, subject: str, email: str | None, role: str | None) -> User:
    """Record a provider log-in of a linked account: its e-mail, the time, and — when the provider decides
    the role (`role` not None) — the user's role. A teacher the roster made stays one; a teacher the provider
    made becomes a learner again when the provider stops saying so."""
    i, u = s.identities, s.users
    where = (i.c.issuer == issuer) & (i.c.subject == subject)
    with db.engine.begin() as conn:
        row = conn.execute(
            sa.select(i.c.user_id, i.c.teacher_by_provider, u.c.role)
            .join(u, u.c.id == i.c.user_id)
            .where(where)
        ).one()
        by_provider = bool(row.teacher_by_provider)
        new_role = row.role
        if role == "teacher" and row.role != "teacher":
            new_role, by_provider = "teacher", True
        elif role == "learner" and by_provider:
            new_role, by_provider = "learner", False
        conn.execute(
            i.update()
            .where(where)
            .values(email=email, last_login_at=time.time(), teacher_by_provider=by_provider)
        )
        if new_role != row.role:
            conn.execute(u.update().where(u.c.id == row.user_id).values(role=new_role))
    user = db.user_by_id(row.user_id)
    assert user is not None
    return user


def create_linked(
    db: ClassroomDB,
    usernames: list[str],
    display_name: str,
    email: str | None,
    issuer: str,
    subject: str,
    teacher: bool,
) -> User:
    """A new account (no password) linked to (issuer, subject): the first of `usernames` that is free. Two
    first log-ins of one account at once make one user (the second finds the first's link)."""
    now = time.time()
    try:
        with db.engine.begin() as conn:
            taken = {
                r[0]
                for r in conn.execute(sa.select(s.users.c.username).where(s.users.c.username.in_(usernames)))
            }
            free = next((n for n in usernames if n not in taken), None)
            if free is None:
                raise AccountError("no free username for this account; ask your teacher to add you")
            user_id = conn.execute(
                s.users.insert().values(
                    username=free,
                    display_name=display_name or free,
                    role="teacher" if teacher else "learner",
                    password_hash=None,
                    disabled=False,
                    created_at=now,
                    email=email,
                )
            ).inserted_primary_key[0]
            conn.execute(
                s.identities.insert().values(
                    issuer=issuer,
                    subject=subject,
                    user_id=user_id,
                    email=email,
                    teacher_by_provider=teacher,
                    created_at=now,
                    last_login_at=now,
                )
            )
    except IntegrityError:
        found = linked(db, issuer, subject)
        if found is None:
            raise AccountError("this e-mail or username was taken at this very moment; try again") from None
        return found.user
    user = db.user_by_id(int(user_id))
    assert user is not None
    return user


# ---- log-ins in flight ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pending:
    browser_hash: str
    nonce: str
    code_verifier: str
    next_path: str
    created_at: float


def save_pending(
    db: ClassroomDB, state: str, browser: str, nonce: str, verifier: str, next_path: str, ttl_s: float
) -> None:
    """Remember a log-in sent to the provider. Expired ones are dropped; at MAX_PENDING the oldest make room
    (their callbacks find nothing: "start again"), so that a flood of unfinished log-ins costs a stranger
    MAX_PENDING requests per person it pushes out mid-log-in, instead of closing the door to everyone."""
    p = s.sso_pending
    now = time.time()
    with db.engine.begin() as conn:
        conn.execute(p.delete().where(p.c.created_at < now - ttl_s))
        over = (conn.execute(sa.select(sa.func.count()).select_from(p)).scalar() or 0) - MAX_PENDING + 1
        if over > 0:
            oldest = sa.select(p.c.state_hash).order_by(p.c.created_at).limit(over).scalar_subquery()
            conn.execute(p.delete().where(p.c.state_hash.in_(oldest)))
        conn.execute(
            p.insert().values(
                state_hash=_hash(state),
                browser_hash=_hash(browser),
                nonce=nonce,
                code_verifier=verifier,
                next_path=next_path,
                created_at=now,
            )
        )


def take_pending(db: ClassroomDB, state: str) -> Pending | None:
    """The log-in `state` names, deleted as it is read, in one statement (DELETE … RETURNING: SQLite 3.35+,
    PostgreSQL): of callbacks racing with one state, one gets it and every other finds nothing."""
    p = s.sso_pending
    with db.engine.begin() as conn:
        row = conn.execute(
            p.delete()
            .where(p.c.state_hash == _hash(state))
            .returning(p.c.browser_hash, p.c.nonce, p.c.code_verifier, p.c.next_path, p.c.created_at)
        ).first()
    if row is None:
        return None
    return Pending(row.browser_hash, row.nonce, row.code_verifier, row.next_path, float(row.created_at))


def browser_matches(pending: Pending, browser: str | None) -> bool:
    return bool(browser) and hmac.compare_digest(pending.browser_hash, _hash(browser or ""))
