"""A class's log-in through its OpenID provider, in the two halves the web routes call (web/classroom/oidc.py).

`start` makes a fresh state, nonce and PKCE verifier (oidc_client.OIDCClient.begin), keeps what the callback
must check on the server (store/identities.py: sso_pending, under the state's hash) bound to a random token
the browser keeps in a cookie, and says where to send the browser. `finish` takes that row (single use),
checks the browser's token, the provider's `error` and `iss` answers, redeems the code with the verifier,
verifies the ID token, and lets the class's OIDCAuthenticator say who it is. Every refusal is an SSOError
with its HTTP status and a sentence for the page; nothing is created before every check passed.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from tritonlab.classroom.oidc import OIDCSettings, SSOError
from tritonlab.classroom.oidc_client import OIDCClient
from tritonlab.classroom.room import Classroom, User
from tritonlab.store import identities

PENDING_TTL_S = 600.0  # from start to the callback


@dataclass
class SSOLogin:
    room: Classroom
    client: OIDCClient

    @classmethod
    def of(cls, room: Classroom) -> SSOLogin | None:
        """The class's provider log-in, or None when it logs in with passwords only."""
        return cls(room, OIDCClient(room.sso)) if room.sso is not None else None

    @property
    def settings(self) -> OIDCSettings:
        return self.client.settings

    @property
    def name(self) -> str:
        """The provider's name on the log-in button."""
        return self.settings.name

    @property
    def only(self) -> bool:
        """No password log-in and no password sign-up."""
        return self.settings.only

    def start(self, next_path: str) -> tuple[str, str]:
        """(the provider URL to send the browser to, the token that binds this log-in to that browser)."""
        url, state, nonce, verifier = self.client.begin()
        browser = secrets.token_urlsafe(32)
        identities.save_pending(self.room.db, state, browser, nonce, verifier, next_path, PENDING_TTL_S)
        return url, browser

    def finish(self, state: str, browser: str | None, code: str, error: str, issuer: str) -> tuple[User, str]:
        """(who logged in, the path to send them to) for the provider's answer, or SSOError."""
        pending = identities.take_pending(self.room.db, state) if state else None
        if pending is None:
            raise SSOError(401, "this log-in is unknown, already used or expired: start again from /login")
        if not identities.browser_matches(pending, browser):
            raise SSOError(401, "this log-in was started in another browser: start again from /login")
        if time.time() - pending.created_at > PENDING_TTL_S:
            raise SSOError(401, "this log-in took longer than 10 minutes: start again from /login")
        if error:
            shown = "".join(c for c in error[:60] if c.isalnum() or c in "_-")
            raise SSOError(401, f"the provider did not log you in ({shown})")
        if issuer and issuer != self.settings.issuer:  # RFC 9207: an answer from another provider (mix-up)
            raise SSOError(401, "this answer comes from another provider than the class's")
        if (
            not issuer
            and self.client.metadata().get("authorization_response_iss_parameter_supported") is True
        ):
            raise SSOError(401, "the provider's answer does not say which provider it comes from (iss)")
        if not code:
            raise SSOError(401, "the provider's answer carries no authorization code")
        identity = self.client.finish(code, pending.nonce, pending.code_verifier)
        klass = self.room.the_class() or {}
        assert self.room.sso_auth is not None
        return self.room.sso_auth.authenticate(identity, bool(klass.get("join_open"))), pending.next_path

    def logout_url(self, user: User) -> str | None:
        """The provider's end-session URL when `user` logged in through it (RP-initiated logout), else None."""
        if identities.subject_of(self.room.db, user.id, self.settings.issuer) is None:
            return None
        return self.client.logout_url()
