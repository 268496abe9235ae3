"""Who is this? The `Authenticator` seam and its password implementation (argon2id, back-off).

An Authenticator turns credentials into a `User` or refuses. The web layer only calls `authenticate` and
then opens a session for the user it got, so another way of proving identity plugs in beside this one:
an OIDC authenticator would take the provider's callback (code + state), verify the ID token, and map its
`sub`/`preferred_username` to a row of `users` (creating learners when the join link is open); sessions,
CSRF, roles and per-learner data stay exactly as they are (docs/classroom.md, "Single sign-on").

Back-off, not lockout: after FREE_TRIES wrong passwords for one (account, client address) pair, that pair
must wait 2, 4, 8 … seconds (at most MAX_DELAY_S) before the next try is even checked. Other addresses are
not affected, so nobody can lock a learner out from elsewhere; a teacher's unlock clears the counter.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Protocol

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from tritonlab.store.classroom import ClassroomDB, User

FREE_TRIES = 5
MAX_DELAY_S = 900.0
_hasher = PasswordHasher()  # argon2id, the library's current defaults
_DUMMY = _hasher.hash("tritonlab-no-such-user")  # verified against for unknown users: equal timing
WORDS = (
    "amber anvil arch aspen atlas basil beacon birch bison blaze brook cable cedar cinder cobalt comet coral "
    "crane delta dune ember fable falcon fern fjord flint forge garnet glacier harbor hazel heron indigo "
    "iris jade juniper kelp kestrel lagoon lantern larch lotus lumen maple marble meadow mesa nebula nimbus "
    "oak onyx opal orbit otter pebble pine pixel plume prism quartz quill raven reef ridge river saffron "
    "sage sierra slate sparrow spruce summit tango thistle tide topaz tundra umber vale vapor willow yarrow "
    "zephyr zinc"
).split()


def hash_password(password: str) -> str:
    return _hasher.hash(password)


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
        failures, last_at = self.db.failures(name, address)
        wait = last_at + delay_for(failures) - time.time()
        if wait > 0:
            raise LoginRefused("too many wrong passwords from here: wait and try again", retry_after=wait)
        user = self.db.user_by_name(name)
        stored = self.db.password_hash(user.id) if user else None
        try:
            _hasher.verify(stored or _DUMMY, password)
            ok = stored is not None
        except (VerificationError, InvalidHashError):
            ok = False
        if not ok or user is None:
            self.db.record_failure(name, address)
            raise LoginRefused("wrong username or password")
        if user.disabled:
            raise LoginRefused("this account is disabled; ask your teacher")
        self.db.clear_failures(name, address)
        if _hasher.check_needs_rehash(stored or ""):
            self.db.set_password_hash(user.id, hash_password(password))
        return user
