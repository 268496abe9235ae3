"""The classroom: one class, its accounts, and a service per learner over the shared workers.

`Classroom` is what the CLI (`tritonlab classroom …`) and the web server (`serve --classroom`) call. A
`LearnerService` is the single-user `Service` with the learner's own store and code swapped in: every
existing route that takes a service acts on the learner it was made for, and nothing else.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import re
import secrets
import time
from pathlib import Path

from tritonlab import config
from tritonlab.classroom import insights
from tritonlab.classroom.auth import (
    Authenticator,
    OIDCAuthenticator,
    PasswordAuthenticator,
    PasswordsOff,
    hash_password,
    new_password,
)
from tritonlab.classroom.oidc import OIDCSettings
from tritonlab.models import Course, Exercise
from tritonlab.runs import caches
from tritonlab.service import Service
from tritonlab.store import identities, leaderboard
from tritonlab.store.accounts import ROLES, USERNAME, AccountError, User, check_name
from tritonlab.store.classroom import ClassroomDB
from tritonlab.store.database import database_url, redact

JOIN_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,27}$")  # a self-chosen name: the number added keeps it <= 32
MIN_PASSWORD = 8
JOIN_OPEN_S = (
    2 * 3600.0
)  # the join link closes by itself this long after it was opened (init, --open, button)
JOIN_OPEN_MAX_S = 7 * 24 * 3600.0
STUCK_ATTEMPTS = 3  # failed checks on one exercise, never passed: the learner is listed as stuck
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

__all__ = ["AccountError", "Classroom", "LearnerService", "User", "csv_safe", "database_url", "redact"]


def csv_safe(value: object) -> object:
    """A spreadsheet cell that cannot run as a formula: text starting with = + - @ (or tab/CR) gets a quote."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def check_username(name: str) -> str:
    name = name.strip().lower()
    if not USERNAME.match(name):
        raise AccountError(
            f"{name!r} is not a valid username: 2-32 characters, lowercase letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


class LearnerService(Service):
    """`Service` for one learner: the base service's course, workers and run queue (where this learner holds
    at most one slot at a time); this learner's store and code. Made per request (cheap: no I/O)."""

    def __init__(self, base: Service, db: ClassroomDB, user: User, folder: Path) -> None:  # noqa: D107
        _ = base.choice  # decide the backend once, on the base, before copying its state
        self.__dict__.update(base.__dict__)
        self.base = base
        self.user = user
        self._store = db.learner(user.id)  # type: ignore[assignment]
        self.workspace = db.code(user.id, base.course)  # type: ignore[assignment]
        self._folder = folder
        # what this learner compiles reaches no one else's runs (runs/caches.py)
        self.cache_name = caches.learner_name(user.id)
        # one slot of the shared run queue at a time for this learner, whatever kind of run (service/gate.py)
        self.run_owner = ("learner", user.id)

    def zygote(self):  # type: ignore[override]
        return self.base.zygote()

    def gate(self):  # type: ignore[override]
        return self.base.gate()

    def warm_counts(self) -> dict | None:  # the base's workers
        return self.base.warm_counts()

    def warm_up(self) -> None:
        self.base.warm_up()

    def close(self) -> None:  # the base service owns the workers
        pass

    def learner_file(self, exercise: Exercise) -> Path:
        """The learner's stored code, written to their private run folder for the sandbox to read."""
        return self.workspace.materialize(exercise, self._folder)  # type: ignore[attr-defined]


class Classroom:
    def __init__(self, url: str | None = None, adopt: Path | None = None) -> None:
        legacy = adopt if adopt is not None else config.database_path()
        self.db = ClassroomDB(url or database_url(), legacy_progress=legacy)
        self.auth: Authenticator = PasswordAuthenticator(self.db)
        self.sso: OIDCSettings | None = None  # the class's OpenID provider (use_sso), if it has one
        self.sso_auth: OIDCAuthenticator | None = None

    def use_sso(self, settings: OIDCSettings) -> None:
        """Log in through an OpenID provider too (docs/classroom.md, "Single sign-on"); with `settings.only`,
        no password log-in and no password sign-up through the join link."""
        self.sso = settings
        self.sso_auth = OIDCAuthenticator(self.db, settings)
        if settings.only:
            self.auth = PasswordsOff(settings.name)

    def close(self) -> None:
        self.db.close()

    @property
    def where(self) -> str:
        return redact(self.db.url)

    # ---- the class and its accounts ------------------------------------------------------------------------

    def init(self, name: str, teacher: str = "teacher") -> dict:
        if not name.strip():
            raise AccountError("the class needs a name (--name)")
        self.db.create_class(check_name(name, "the class's name"))
        self.set_join_open(True)  # for JOIN_OPEN_S: the link closes by itself
        klass = self.the_class() or {}
        user, password = self.add(teacher, "Teacher", "teacher")
        return {
            "class": {
                "name": klass["name"],
                "join_open": klass["join_open"],
                "join_open_until": klass["join_open_until"],
            },
            "teacher": {"username": user.username, "password": password},
            "join_path": f"/join/{klass['join_code']}",
        }

    def the_class(self) -> dict | None:
        """The class; `join_open` is true only while the teacher's opening has not expired
        (`join_open_until`, seconds since the epoch; a link opened before expiries existed counts as closed)."""
        klass = self.db.the_class()
        if klass is None:
            return None
        raw = self.db.setting("join_open_until")
        until = float(raw) if raw else None
        open_ = bool(klass["join_open"]) and until is not None and time.time() < until
        return {**klass, "join_open": open_, "join_open_until": until if open_ else None}

    def add(
        self,
        username: str,
        display_name: str = "",
        role: str = "learner",
        password: str | None = None,
        email: str | None = None,
    ) -> tuple[User, str]:
        """A new account with `password` (else a generated one); `email`: the roster e-mail a provider log-in
        matches (docs/classroom.md, "Single sign-on")."""
        name = check_username(username)
        if role not in ROLES:
            raise AccountError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        password = password or new_password()
        if len(password) < MIN_PASSWORD:
            raise AccountError(f"a password needs at least {MIN_PASSWORD} characters")
        shown = check_name(display_name, "a display name") or name
        if email and identities.user_by_email(self.db, email) is not None:
            raise AccountError(f"the e-mail {email.strip().lower()} already belongs to another account")
        user = self.db.add_user(name, shown, role, hash_password(password))
        if email:
            identities.set_email(self.db, user.id, email)
        return user, password

    def set_email(self, user: User, email: str | None) -> str | None:
        return identities.set_email(self.db, user.id, email)

    def email(self, user: User) -> str | None:
        return identities.email_of(self.db, user.id)

    def import_csv(self, text: str) -> list[dict]:
        """Roster rows `username[,display_name[,role[,password[,email]]]]` (a header row naming `username` is
        skipped). All rows are checked before any account is made."""
        rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
        if rows and rows[0][0].strip().lower() == "username":
            rows = rows[1:]
        planned, seen, emails = [], set(), set()
        existing = {u.username for u in self.db.users()}
        for number, row in enumerate(rows, 1):
            cells = [c.strip() for c in row] + ["", "", "", ""]
            name = check_username(cells[0])
            role = cells[2] or "learner"
            if role not in ROLES:
                raise AccountError(f"row {number}: role must be learner or teacher, not {role!r}")
            if name in seen or name in existing:
                raise AccountError(f"row {number}: the username {name!r} is taken")
            if cells[3] and len(cells[3]) < MIN_PASSWORD:
                raise AccountError(f"row {number}: a password needs at least {MIN_PASSWORD} characters")
            check_name(cells[1], f"row {number}: the display name")
            try:
                email = identities.normal_email(cells[4]) if cells[4] else None
            except AccountError as exc:
                raise AccountError(f"row {number}: {exc}") from None
            if email and (email in emails or identities.user_by_email(self.db, email) is not None):
                raise AccountError(f"row {number}: the e-mail {email} belongs to another account")
            seen.add(name)
            emails.add(email)
            planned.append((name, cells[1], role, cells[3] or None, email))
        made = []
        for name, display, role, password, email in planned:
            user, pw = self.add(name, display, role, password, email)
            made.append({"username": user.username, "role": user.role, "password": pw, "email": email})
        return made

    def users(self) -> list[User]:
        return self.db.users()

    def user(self, username_or_id: str | int) -> User:
        found = (
            self.db.user_by_id(username_or_id)
            if isinstance(username_or_id, int)
            else self.db.user_by_name(username_or_id.strip().lower())
        )
        if found is None:
            raise AccountError(f"no account {username_or_id!r}")
        return found

    def reset_password(self, user: User) -> str:
        password = new_password()
        self.db.set_password_hash(user.id, hash_password(password))  # also ends the user's sessions
        self.db.clear_failures(user.username)
        return password

    def set_password(self, user: User, password: str) -> None:
        if len(password) < MIN_PASSWORD:
            raise AccountError(f"a password needs at least {MIN_PASSWORD} characters")
        self.db.set_password_hash(user.id, hash_password(password))

    def set_disabled(self, user: User, disabled: bool) -> None:
        self.db.set_disabled(user.id, disabled)

    def unlock(self, user: User) -> None:
        self.db.clear_failures(user.username)

    def set_join_open(self, open_: bool, for_s: float = JOIN_OPEN_S) -> None:
        """Open the join link for `for_s` seconds (then it closes by itself), or close it now."""
        if open_:
            if not 60 <= for_s <= JOIN_OPEN_MAX_S:
                raise AccountError("the join link opens for at least a minute and at most 7 days")
            self.db.set_setting("join_open_until", repr(time.time() + for_s))
        self.db.set_join_open(open_)

    def check_join(self, code: str) -> None:
        """LookupError for a code that is not the class's, PermissionError while its link is closed."""
        klass = self.the_class()
        if klass is None or not hmac.compare_digest(
            klass["join_code"].encode(), code.encode("utf-8", "surrogatepass")
        ):
            raise LookupError("no class has this join link")
        if not klass["join_open"]:
            raise PermissionError(
                "this class's join link is closed (or has expired); ask your teacher to open it or for an account"
            )

    def join(self, code: str, username: str, display_name: str, password: str) -> User:
        """Self-registration through the join link, while the teacher keeps it open. The account's username is
        the name chosen plus a number drawn here (`anna-417`), whether or not someone already has `anna-…`: the
        answer is the same for every name, so the join link cannot tell who is in the class (issue 34). The
        learner sees their username on the page and logs in with it."""
        self.check_join(code)
        if self.sso is not None and self.sso.only:
            raise PermissionError(
                f"this class signs up with {self.sso.name} only: use the button on this page"
            )
        name = username.strip().lower()
        if not JOIN_NAME.match(name):
            raise AccountError(
                f"{name!r} is not a valid name: 2-28 characters, lowercase letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            )
        if len(password) < MIN_PASSWORD:
            raise AccountError(f"a password needs at least {MIN_PASSWORD} characters")
        shown = check_name(display_name, "a display name")
        hashed = hash_password(password)
        for attempt in range(12):
            digits = 3 if attempt < 8 else 4
            candidate = f"{name}-{secrets.randbelow(10**digits):0{digits}d}"
            if self.db.user_by_name(candidate) is not None:
                continue
            try:
                return self.db.add_user(candidate, shown or name, "learner", hashed)
            except AccountError:  # taken between the look and the insert: draw again
                continue
        raise AccountError(f"no free username starts with {name!r}; choose another name")

    # ---- per-learner services ------------------------------------------------------------------------------

    def run_folder(self, user: User) -> Path:
        """runs/classroom/<HMAC of the user id>: not listable (0711), so a run cannot find another learner's
        folder by listing, and the name cannot be guessed without the server's secret."""
        top = config.runs_dir() / "classroom"
        top.mkdir(mode=0o711, exist_ok=True)
        top.chmod(0o711)
        tag = hmac.new(self.db.secret(), f"user-{user.id}".encode(), hashlib.sha256).hexdigest()[:32]
        return top / tag

    def learner_service(self, base: Service, user: User) -> LearnerService:
        return LearnerService(base, self.db, user, self.run_folder(user))

    # ---- the teacher's view ---------------------------------------------------------------------------------

    def matrix(self, course: Course) -> dict:
        exercises = [e.id for e in course.exercises()]
        cells: dict[int, dict[str, dict]] = {}
        for row in self.db.summary():
            cells.setdefault(row["user_id"], {})[row["exercise"]] = {
                "passed": row["passed"],
                "attempts": row["attempts"],
                "last_failure": None if row["passed"] else row["last_failure"],
                "last_at": row["last_at"],
            }
        activity = self.db.last_activity()
        learners, stuck = [], []
        for user in self.db.users():
            if user.role != "learner":
                continue
            mine = cells.get(user.id, {})
            learners.append(
                {
                    **user.to_json(),
                    "passed": sum(1 for c in mine.values() if c["passed"]),
                    "last_activity": activity.get(user.id),
                    "cells": {ex: mine.get(ex) for ex in exercises},
                }
            )
            for ex in exercises:
                cell = mine.get(ex)
                if cell and not cell["passed"] and cell["attempts"] >= STUCK_ATTEMPTS:
                    stuck.append(
                        {
                            "user_id": user.id,
                            "username": user.username,
                            "display_name": user.display_name,
                            "exercise": ex,
                            "attempts": cell["attempts"],
                            "last_failure": cell["last_failure"],
                            "last_at": cell["last_at"],
                        }
                    )
        return {"exercises": exercises, "learners": learners, "stuck": stuck, "generated_at": time.time()}

    def insights(self, course: Course) -> dict:
        """The numbers of the teacher's pictures (classroom/insights.py), in the course's exercise order."""
        return insights.class_insights(self.db, [e.id for e in course.exercises()])

    def learner_details(self, course: Course, exercise: str, user_ids: list[int]) -> list[dict]:
        """A drill-down's learners: their checks of `exercise`, latest failure and code as it is now."""
        return insights.learner_details(self.db, course, exercise, user_ids)

    def progress_csv(self, course: Course) -> str:
        data = self.matrix(course)
        out = io.StringIO()
        writer = csv.writer(out)
        header = ["username", "display_name", "disabled", "passed", "last_activity"]
        for ex in data["exercises"]:
            header += [f"{ex}:passed", f"{ex}:attempts", f"{ex}:last_failure"]
        writer.writerow(header)
        for learner in data["learners"]:
            at = learner["last_activity"]
            row: list[object] = [
                learner["username"],
                learner["display_name"],
                learner["disabled"],
                learner["passed"],
                time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) if at else "",
            ]
            for ex in data["exercises"]:
                cell = learner["cells"][ex] or {}
                row += [bool(cell.get("passed")), cell.get("attempts", 0), cell.get("last_failure") or ""]
            writer.writerow([csv_safe(v) for v in row])
        return out.getvalue()

    # ---- the opt-in speed leaderboard (store/leaderboard.py) --------------------------------------------------

    def leaderboard(self, course: Course) -> dict:
        """{"enabled", "exercises": {id: [{rank, name, ms, gpu, at}]}}: empty while the teacher has it off."""
        if not leaderboard.enabled(self.db):
            return {"enabled": False, "exercises": {}}
        return {"enabled": True, "exercises": leaderboard.board(self.db, [e.id for e in course.exercises()])}

    def leaderboard_enabled(self) -> bool:
        return leaderboard.enabled(self.db)

    def set_leaderboard(self, on: bool) -> None:
        leaderboard.set_enabled(self.db, on)

    def leaderboard_name(self, user: User) -> str | None:
        return leaderboard.name_of(self.db, user.id)

    def set_leaderboard_name(self, user: User, name: str | None) -> str | None:
        """Join the board under `name`, rename, or leave it (None / ""); AccountError if it cannot be used."""
        try:
            return leaderboard.set_name(self.db, user.id, name)
        except leaderboard.NameError_ as exc:
            raise AccountError(str(exc)) from None

    def learner_code(self, user: User, exercise: Exercise, course: Course) -> tuple[str, str]:
        return self.db.code(user.id, course).read(exercise)
