"""Who is this? The `Authenticator` seam: passwords (argon2id, back-off) and an OpenID provider's log-in.

An Authenticator turns credentials into a `User` or refuses. The web layer only calls `authenticate` and
then opens a session for the user it got: sessions, CSRF, roles and per-learner data are the same whichever
proved who it is. `PasswordAuthenticator` takes a username and password; `OIDCAuthenticator` takes an
`Identity` the provider's verified ID token proved (classroom/oidc_client.py) and maps it to a row of `users`:
its linked account, else the roster entry with its e-mail, else a new learner while the join link is open —
after the class's allowed domains and groups said yes. `PasswordsOff` stands in for passwords in a class that
logs in through its provider only (docs/classroom.md, "Single sign-on").

Back-off, not lockout: after FREE_TRIES wrong passwords for one (account, client address) pair, that pair
must wait 2, 4, 8 … seconds (at most MAX_DELAY_S) before the next try is even checked. Other addresses are
not affected, so nobody can lock a learner out from elsewhere; a teacher's unlock clears the counter.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from tritonlab import config
from tritonlab.classroom.hash_pool import HashPool
from tritonlab.classroom.oidc import Identity, OIDCSettings, SSOError
from tritonlab.store import identities
from tritonlab.store.accounts import USERNAME, AccountError, User
from tritonlab.store.classroom import ClassroomDB

FREE_TRIES = 5
MAX_DELAY_S = 900.0
# At most this many hashes at once: each holds `m` KiB for its duration, so a burst of 200 log-ins at the start
# of a lab costs at most HASH_SLOTS x 64 MiB and leaves the other request threads a core to serve pages.
HASH_SLOTS = max(1, min(4, (os.cpu_count() or 2) - 1))
_slots = threading.BoundedSemaphore(HASH_SLOTS)
# The web server's log-ins and joins wait for a hash here, not in the request thread pool: a bounded queue
# with a fair share per client address (classroom/hash_pool.py), while pages keep being served.
HASHING = HashPool(HASH_SLOTS)


@functools.cache
def _hasher_for(t: int, m: int, p: int) -> tuple[PasswordHasher, str]:
    hasher = PasswordHasher(time_cost=t, memory_cost=m, parallelism=p)  # argon2id
    return hasher, hasher.hash("tritonlab-no-such-user")  # the dummy: unknown users cost the same time


def hasher() -> tuple[PasswordHasher, str]:
    """The argon2id hasher for the configured cost (config.argon2_cost) and its dummy hash."""
    cost = config.argon2_cost()
    return _hasher_for(cost["t"], cost["m"], cost["p"])


WORDS = (
    "amber anvil arch aspen atlas basil beacon birch bison blaze brook cable cedar cinder cobalt comet coral "
    "crane delta dune ember fable falcon fern fjord flint forge garnet glacier harbor hazel heron indigo "
    "iris jade juniper kelp kestrel lagoon lantern larch lotus lumen maple marble meadow mesa nebula nimbus "
    "oak onyx opal orbit otter pebble pine pixel plume prism quartz quill raven reef ridge river saffron "
    "sage sierra slate sparrow spruce summit tango thistle tide topaz tundra umber vale vapor willow yarrow "
    "zephyr zinc"
).split()


def hash_password(password: str) -> str:
    with _slots:
        return hasher()[0].hash(password)


def new_password() -> str:
    """Four words and two digits: about 32 bits from the word list alone, typed easily in a classroom."""
    words = [secrets.choice(WORDS) for _ in range(4)]
    return "-".join(words) + f"-{secrets.randbelow(100):02d}"


class LoginRefused(Exception):
    """Wrong credentials, a disabled account, or too many tries: `retry_after` > 0 for the last."""

    def __init__(self, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Authenticator(Protocol):
    def authenticate(self, username: str, password: str, address: str) -> User: ...


def delay_for(failures: int) -> float:
    if failures < FREE_TRIES:
        return 0.0
    return min(MAX_DELAY_S, 2.0 ** (failures - FREE_TRIES + 1))


@dataclass
class PasswordAuthenticator:
    db: ClassroomDB

    def authenticate(self, username: str, password: str, address: str) -> User:
        name = username.strip().lower()
        if not USERNAME.match(name):  # no account has this name; the database is never asked (a NUL or a
            raise LoginRefused("wrong username or password")  # name past its column is an error there)
        failures, last_at = self.db.failures(name, address)
        wait = last_at + delay_for(failures) - time.time()
        if wait > 0:
            raise LoginRefused("too many wrong passwords from here: wait and try again", retry_after=wait)
        user = self.db.user_by_name(name)
        stored = self.db.password_hash(user.id) if user else None
        hash_, dummy = hasher()
        try:
            with _slots:
                hash_.verify(stored or dummy, password)
            ok = stored is not None
        except (VerificationError, InvalidHashError):
            ok = False
        if not ok or user is None:
            self.db.record_failure(name, address)
            raise LoginRefused("wrong username or password")
        if user.disabled:
            raise LoginRefused("this account is disabled; ask your teacher")
        self.db.clear_failures(name, address)
        if hash_.check_needs_rehash(stored or ""):  # the configured cost changed: upgrade on the next log-in
            self.db.set_password_hash(user.id, hash_password(password))
        return user


# ---- an OpenID provider's log-in ---------------------------------------------------------------------------------

USERNAME_CHARS = re.compile(r"[^a-z0-9_.-]+")  # what room.USERNAME allows after the first character


def usernames_for(identity: Identity) -> list[str]:
    """Usernames to try for a new account, in order: the provider's hint made valid, then numbered."""
    base = USERNAME_CHARS.sub("-", identity.username_hint.lower()).lstrip("-_.")[:28].rstrip("-_.")
    if len(base) < 2:
        base = "learner"
    return [base] + [f"{base}-{n}" for n in range(2, 10)] + [f"{base}-{secrets.token_hex(3)}"]


@dataclass
class PasswordsOff:
    """The Authenticator of a class that logs in through its provider only: every password is refused."""

    name: str

    def authenticate(self, username: str, password: str, address: str) -> User:
        raise LoginRefused(f"this class logs in with {self.name} only: use the button on the log-in page")


@dataclass
class OIDCAuthenticator:
    """A verified provider identity → a user of this class, or a refusal (SSOError 403) saying why not."""

    db: ClassroomDB
    settings: OIDCSettings

    def authenticate(self, identity: Identity, join_open: bool) -> User:
        s = self.settings
        if s.allowed_domains:
            if identity.email is None:
                raise SSOError(
                    403, "the provider did not give a verified e-mail address, which this class needs"
                )
            if identity.email.rsplit("@", 1)[1] not in s.allowed_domains:
                raise SSOError(403, f"{identity.email} is not in this class's e-mail domain(s)")
        groups = set(identity.groups)
        if s.allowed_groups and not groups & set(s.allowed_groups + s.teacher_groups):
            raise SSOError(403, "your account is not in a group this class admits")
        role = ("teacher" if groups & set(s.teacher_groups) else "learner") if s.teacher_groups else None
        found = identities.linked(self.db, identity.issuer, identity.subject)
        if found is None:
            found_user = self._first_login(identity, join_open, role)
        else:
            found_user = identities.logged_in(
                self.db, identity.issuer, identity.subject, identity.email, role
            )
        if found_user.disabled:
            raise SSOError(403, "this account is disabled; ask your teacher")
        return found_user

    def _first_login(self, identity: Identity, join_open: bool, role: str | None) -> User:
        rostered = identities.user_by_email(self.db, identity.email) if identity.email else None
        if rostered is not None:
            if identities.subject_of(self.db, rostered.id, identity.issuer) is not None:
                raise SSOError(
                    403,
                    f"the account with the e-mail {identity.email} is already linked to another account at the "
                    "provider; ask your teacher",
                )
            identities.link(self.db, rostered.id, identity.issuer, identity.subject, identity.email)
            return identities.logged_in(self.db, identity.issuer, identity.subject, identity.email, role)
        if not join_open:
            raise SSOError(403, "this class is closed to new learners; ask your teacher to add you")
        try:
            return identities.create_linked(
                self.db,
                usernames_for(identity),
                identity.name,
                identity.email,
                identity.issuer,
                identity.subject,
                teacher=role == "teacher",
            )
        except AccountError as exc:
            raise SSOError(403, str(exc)) from None
