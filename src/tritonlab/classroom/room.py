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
import time
from pathlib import Path

from tritonlab import config
from tritonlab.classroom import insights
from tritonlab.classroom.auth import PasswordAuthenticator, hash_password, new_password
from tritonlab.models import Course, Exercise
from tritonlab.runs import caches
from tritonlab.service import Service
from tritonlab.store import leaderboard
from tritonlab.store.accounts import ROLES, AccountError, User
from tritonlab.store.classroom import ClassroomDB
from tritonlab.store.database import database_url, redact

USERNAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,31}$")
MIN_PASSWORD = 8
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
    """`Service` for one learner: the base service's course, workers and FIFO gate; this learner's store and
    code. Made per request (cheap: no I/O)."""

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

    def zygote(self):  # type: ignore[override]
        return self.base.zygote()

    def gate(self):  # type: ignore[override]
        return self.base.gate()

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
        self.auth = PasswordAuthenticator(self.db)

    def close(self) -> None:
        self.db.close()

    @property
    def where(self) -> str:
        return redact(self.db.url)

    # ---- the class and its accounts ------------------------------------------------------------------------

    def init(self, name: str, teacher: str = "teacher") -> dict:
        if not name.strip():
            raise AccountError("the class needs a name (--name)")
        klass = self.db.create_class(name.strip())
        user, password = self.add(teacher, "Teacher", "teacher")
        return {
            "class": {"name": klass["name"], "join_open": klass["join_open"]},
            "teacher": {"username": user.username, "password": password},
            "join_path": f"/join/{klass['join_code']}",
        }

    def the_class(self) -> dict | None:
        return self.db.the_class()

    def add(
        self, username: str, display_name: str = "", role: str = "learner", password: str | None = None
    ) -> tuple[User, str]:
        name = check_username(username)
        if role not in ROLES:
            raise AccountError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        password = password or new_password()
        if len(password) < MIN_PASSWORD:
            raise AccountError(f"a password needs at least {MIN_PASSWORD} characters")
        user = self.db.add_user(name, display_name.strip() or name, role, hash_password(password))
        return user, password

    def import_csv(self, text: str) -> list[dict]:
        """Roster rows `username[,display_name[,role[,password]]]` (a header row naming `username` is
        skipped). All rows are checked before any account is made."""
        rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
        if rows and rows[0][0].strip().lower() == "username":
            rows = rows[1:]
        planned, seen = [], set()
        existing = {u.username for u in self.db.users()}
        for number, row in enumerate(rows, 1):
            cells = [c.strip() for c in row] + ["", "", ""]
            name = check_username(cells[0])
            role = cells[2] or "learner"
            if role not in ROLES:
                raise AccountError(f"row {number}: role must be learner or teacher, not {role!r}")
            if name in seen or name in existing:
                raise AccountError(f"row {number}: the username {name!r} is taken")
            if cells[3] and len(cells[3]) < MIN_PASSWORD:
                raise AccountError(f"row {number}: a password needs at least {MIN_PASSWORD} characters")
            seen.add(name)
            planned.append((name, cells[1], role, cells[3] or None))
        made = []
        for name, display, role, password in planned:
            user, pw = self.add(name, display, role, password)
            made.append({"username": user.username, "role": user.role, "password": pw})
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

    def set_join_open(self, open_: bool) -> None:
        self.db.set_join_open(open_)

    def join(self, code: str, username: str, display_name: str, password: str) -> User:
        """Self-registration through the join link, while the teacher keeps it open."""
        klass = self.db.the_class()
        if klass is None or not hmac.compare_digest(klass["join_code"], code):
            raise LookupError("no class has this join link")
        if not klass["join_open"]:
            raise PermissionError("this class is closed to new learners; ask your teacher for an account")
        if len(password) < MIN_PASSWORD:
            raise AccountError(f"a password needs at least {MIN_PASSWORD} characters")
        user, _ = self.add(username, display_name, "learner", password)
        return user

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
