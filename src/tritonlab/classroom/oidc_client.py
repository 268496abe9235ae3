"""The relying party's side of the OpenID Connect authorization code flow with PKCE (S256), through Authlib.

`begin` makes the provider URL a browser is sent to, with a fresh `state`, `nonce` and PKCE verifier (the
caller keeps them server-side, bound to that browser); `finish` takes the code the provider sent back,
redeems it with the verifier, and verifies the ID token: its signature against the provider's published keys
(discovery → jwks_uri; re-read once when a token names a key not seen yet), an asymmetric algorithm the
provider advertises, `iss`, `aud` (and `azp`), `exp`/`iat`/`nbf` with a small leeway, not issued long ago,
and the `nonce`. Nothing the provider (or whoever stands between) sends is trusted before that: every response
is size-capped, must be a JSON object, and a malformed one is a refusal, never a crash.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from typing import Any
from urllib.parse import urlencode

from tritonlab.classroom.oidc import Identity, OIDCSettings, SSOError, check_endpoint

MAX_RESPONSE_BYTES = 256 * 1024  # discovery, keys, token and userinfo answers
MAX_ID_TOKEN = 16 * 1024
MAX_TOKEN_AGE_S = 600  # an ID token issued longer ago than this (plus leeway) is refused
HTTP_TIMEOUT_S = 10.0
METADATA_TTL_S = 3600.0
FAILURE_TTL_S = 10.0  # a discovery read that failed is not tried again sooner
KEYS_REFRESH_MIN_S = 30.0  # a token naming an unknown key re-reads the keys at most this often
ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")

log = logging.getLogger("tritonlab.sso")


def _capped(response: Any, *args: object, **kwargs: object) -> Any:
    """requests response hook: read at most MAX_RESPONSE_BYTES of a streamed body, refuse a longer one."""
    data = response.raw.read(MAX_RESPONSE_BYTES + 1, decode_content=True)
    if len(data) > MAX_RESPONSE_BYTES:
        response.close()
        raise SSOError(502, f"the provider's answer from {response.url[:100]} is larger than 256 KiB")
    response._content = data
    response._content_consumed = True
    return response


def _session(settings: OIDCSettings) -> Any:
    from authlib.integrations.requests_client import OAuth2Session

    session = OAuth2Session(
        client_id=settings.client_id,
        client_secret=settings.client_secret,
        token_endpoint_auth_method="client_secret_basic" if settings.client_secret else "none",
        scope=" ".join(settings.scopes),
        redirect_uri=settings.redirect_uri,
        code_challenge_method="S256",
        default_timeout=HTTP_TIMEOUT_S,
    )
    session.stream = True  # bodies are read by _capped, never whole
    session.max_redirects = 0  # an endpoint that redirects is refused, not followed
    session.hooks["response"].append(_capped)
    return session


def _json_object(response: Any, what: str, status: int = 502) -> dict:
    """The answer's JSON object, else SSOError(`status`)."""
    if response.status_code != 200:
        raise SSOError(status, f"the provider's {what} answered HTTP {response.status_code}")
    try:
        data = response.json()
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise SSOError(status, f"the provider's {what} is not a JSON object")
    return data


class OIDCClient:
    """One provider's discovery document and keys (cached), and the two halves of a log-in."""

    def __init__(self, settings: OIDCSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._fetching = threading.Lock()  # one discovery read at a time: the others wait for its answer
        self._metadata: tuple[float, dict] | None = None
        self._failed: tuple[float, SSOError] | None = None
        self._keys: tuple[float, Any] | None = None

    # ---- what the provider publishes ----------------------------------------------------------------------

    def _get(self, url: str, what: str) -> dict:
        import requests

        try:
            with _session(self.settings) as http:
                return _json_object(http.get(url, withhold_token=True), what)
        except requests.RequestException as exc:
            raise SSOError(
                502, f"the provider's {what} ({url[:100]}) could not be read: {type(exc).__name__}"
            ) from None

    def metadata(self) -> dict:
        """The discovery document, checked: its issuer is exactly the configured one, its endpoints are https
        (http on loopback), it offers PKCE with S256 and at least one asymmetric ID token algorithm. Kept an
        hour; a failure is kept FAILURE_TTL_S, so that a provider that is down costs one request-thread wait
        per FAILURE_TTL_S, not one per visitor."""
        with self._fetching:
            now = time.monotonic()
            if self._metadata and now - self._metadata[0] < METADATA_TTL_S:
                return self._metadata[1]
            if self._failed and now - self._failed[0] < FAILURE_TTL_S:
                raise self._failed[1]
            try:
                meta = self._read_metadata()
            except SSOError as exc:
                self._failed = (now, exc)
                raise
            self._metadata, self._failed = (time.monotonic(), meta), None
            return meta

    def _read_metadata(self) -> dict:
        s = self.settings
        meta = self._get(s.discovery_url, "discovery document")
        if meta.get("issuer") != s.issuer:
            raise SSOError(
                502,
                f"the provider's discovery document names the issuer {str(meta.get('issuer'))[:100]!r}, not "
                f"{s.issuer!r}: set --oidc-issuer to exactly what the provider says",
            )
        for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            check_endpoint(meta.get(key), key, s.issuer)
        for key in ("userinfo_endpoint", "end_session_endpoint"):
            if meta.get(key) is not None:
                check_endpoint(meta.get(key), key, s.issuer)
        methods = meta.get("code_challenge_methods_supported")
        if isinstance(methods, list) and "S256" not in methods:
            raise SSOError(
                502, "the provider does not offer PKCE with S256 (code_challenge_methods_supported)"
            )
        if not self.algorithms(meta):
            raise SSOError(
                502, "the provider signs ID tokens with no algorithm this server accepts (RS256, ES256…)"
            )
        return meta

    @staticmethod
    def algorithms(meta: dict) -> list[str]:
        offered = meta.get("id_token_signing_alg_values_supported")
        if not isinstance(offered, list):
            offered = ["RS256"]  # the default OpenID Connect Discovery names
        return [a for a in ASYMMETRIC if a in offered]

    def keys(self, refresh: bool = False) -> Any:
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        with self._lock:
            cached = self._keys
        if cached and (time.monotonic() - cached[0] < (KEYS_REFRESH_MIN_S if refresh else METADATA_TTL_S)):
            return cached[1]
        data = self._get(self.metadata()["jwks_uri"], "key set (jwks_uri)")
        keys = data.get("keys")
        if not isinstance(keys, list) or not keys:
            raise SSOError(502, "the provider's key set holds no keys")
        usable = [
            k for k in keys if isinstance(k, dict) and k.get("kty") in ("RSA", "EC", "OKP") and "d" not in k
        ]
        try:
            key_set = KeySet.import_key_set({"keys": usable})
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            raise SSOError(502, f"the provider's key set cannot be read: {exc}") from None
        with self._lock:
            self._keys = (time.monotonic(), key_set)
        return key_set

    # ---- a log-in ---------------------------------------------------------------------------------------------

    def begin(self) -> tuple[str, str, str, str]:
        """(URL to send the browser to, state, nonce, PKCE code verifier)."""
        meta = self.metadata()
        state, nonce, verifier = (
            secrets.token_urlsafe(32),
            secrets.token_urlsafe(32),
            secrets.token_urlsafe(64),
        )
        with _session(self.settings) as http:
            url, _ = http.create_authorization_url(
                meta["authorization_endpoint"], state=state, code_verifier=verifier, nonce=nonce
            )
        return url, state, nonce, verifier

    def finish(self, code: str, nonce: str, verifier: str) -> Identity:
        """Redeem `code` with the PKCE `verifier`, verify the ID token (and its `nonce`), and say who it is."""
        meta = self.metadata()
        token = self._redeem(meta, code, verifier)
        claims = self._verify(token["id_token"], nonce, token.get("access_token"))
        access = token.get("access_token")
        wanted = ["email", "email_verified"] + ([self.settings.groups_claim] if self._groups_needed() else [])
        if (
            any(_claim(claims, k) is None for k in wanted)
            and isinstance(access, str)
            and meta.get("userinfo_endpoint")
        ):
            claims = {**self._userinfo(meta["userinfo_endpoint"], access, claims["sub"]), **claims}
        return self._identity(claims)

    def logout_url(self) -> str | None:
        """The provider's RP-initiated logout URL (back to the log-in page), when it advertises one."""
        try:
            endpoint = self.metadata().get("end_session_endpoint")
        except SSOError:
            return None
        if not endpoint:
            return None
        query = urlencode(
            {"client_id": self.settings.client_id, "post_logout_redirect_uri": self.settings.post_logout_uri}
        )
        return endpoint + ("&" if "?" in endpoint else "?") + query

    # ---- the steps ---------------------------------------------------------------------------------------

    def _groups_needed(self) -> bool:
        return bool(self.settings.allowed_groups or self.settings.teacher_groups)

    def _redeem(self, meta: dict, code: str, verifier: str) -> dict:
        import requests
        from authlib.integrations.base_client import OAuthError

        try:
            with _session(self.settings) as http:
                token = http.fetch_token(
                    meta["token_endpoint"],
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=verifier,
                    redirect_uri=self.settings.redirect_uri,
                )
        except OAuthError as exc:
            error = "".join(c for c in str(exc.error or "")[:40] if c.isalnum() or c == "_")
            raise SSOError(
                401, f"the provider did not accept this log-in ({error or 'error'}): start again"
            ) from None
        except SSOError as exc:  # an answer over the size cap
            raise SSOError(401, f"the provider's token response was refused: {exc}") from None
        except requests.RequestException as exc:
            raise SSOError(
                502, f"the provider's token endpoint could not be reached: {type(exc).__name__}"
            ) from None
        except Exception as exc:  # a body that is not a token response (Authlib raises what its parsing hits)
            log.warning("unusable token response: %s", type(exc).__name__)
            raise SSOError(401, "the provider's token response could not be read: start again") from None
        id_token = token.get("id_token")
        if not isinstance(id_token, str) or not 0 < len(id_token) <= MAX_ID_TOKEN or id_token.count(".") != 2:
            raise SSOError(401, "the provider's token response holds no usable ID token")
        access = token.get("access_token")
        kind = str(token.get("token_type") or "").lower()
        return {
            "id_token": id_token,
            "access_token": access if isinstance(access, str) and kind == "bearer" else None,
        }

    def _verify(self, id_token: str, nonce: str, access_token: str | None) -> dict:
        from authlib.oidc.core import CodeIDToken
        from joserfc import jwt
        from joserfc.errors import ExpiredTokenError, InvalidKeyIdError, JoseError

        algorithms = self.algorithms(self.metadata())
        try:
            try:
                decoded = jwt.decode(id_token, self.keys(), algorithms=algorithms)
            except InvalidKeyIdError:  # the provider rotated its keys since they were read
                decoded = jwt.decode(id_token, self.keys(refresh=True), algorithms=algorithms)
        except (JoseError, ValueError, TypeError, KeyError, RecursionError) as exc:
            log.warning("ID token refused: %s", type(exc).__name__)
            raise SSOError(401, "the ID token's signature does not verify with the provider's keys") from None
        claims = decoded.claims
        s = self.settings
        checked = CodeIDToken(
            claims,
            decoded.header,
            {"iss": {"essential": True, "value": s.issuer}, "aud": {"essential": True, "value": s.client_id}},
            {"nonce": nonce, "client_id": s.client_id, "access_token": access_token},
        )
        try:
            checked.validate(leeway=s.leeway_s)
        except ExpiredTokenError:
            raise SSOError(401, "the ID token has expired (or this server's clock is wrong)") from None
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            which = getattr(exc, "claim", None) or str(exc)[:60]
            log.warning("ID token refused: %s (%s)", type(exc).__name__, which)
            raise SSOError(401, f"the ID token is not valid for this class ({which})") from None
        if claims["iat"] < time.time() - MAX_TOKEN_AGE_S - s.leeway_s:
            raise SSOError(401, "the ID token was issued too long ago: start again")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not 0 < len(subject) <= 255 or not subject.isprintable():
            raise SSOError(401, "the ID token names no usable subject (sub)")
        return dict(claims)

    def _userinfo(self, endpoint: str, access_token: str, subject: str) -> dict:
        import requests

        try:
            with _session(self.settings) as http:
                response = http.get(
                    endpoint, withhold_token=True, headers={"Authorization": f"Bearer {access_token}"}
                )
                info = _json_object(response, "userinfo answer", 401)  # it refused the token it just gave
        except requests.RequestException as exc:
            raise SSOError(
                502, f"the provider's userinfo endpoint could not be reached: {type(exc).__name__}"
            ) from None
        if info.get("sub") != subject:
            raise SSOError(401, "the provider's userinfo describes another account than the ID token")
        return info

    def _identity(self, claims: dict) -> Identity:
        email = _claim(claims, "email")
        verified = _claim(claims, "email_verified") in (True, "true")
        email = email.strip().lower() if isinstance(email, str) and verified and len(email) <= 254 else None
        groups = _claim(claims, self.settings.groups_claim)
        if isinstance(groups, str):
            groups = [groups]
        groups = (
            tuple(g for g in groups[:1000] if isinstance(g, str) and len(g) <= 256)
            if isinstance(groups, list)
            else ()
        )
        hint = _claim(claims, "preferred_username")
        hint = hint if isinstance(hint, str) else (email.split("@")[0] if email else "")
        name = _claim(claims, "name")
        name = "".join(c for c in name if c.isprintable())[:200].strip() if isinstance(name, str) else ""
        return Identity(self.settings.issuer, claims["sub"], email, name, hint[:64], groups)


def _claim(claims: dict, path: str) -> Any:
    """A claim by name, or by a dotted path into nested objects (realm_access.roles)."""
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value
