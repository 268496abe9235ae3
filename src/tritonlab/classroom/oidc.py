"""Log-in through the university's OpenID provider: the settings, and what a verified log-in proves.

`OIDCSettings` is read from `serve --classroom`'s `--oidc-*` options (each also an environment variable) over
an optional TOML file (`--oidc-config`), checked once at start-up so that a mistake is a message, not a failed
log-in later. `Identity` is what `oidc_client.OIDCClient.finish` returns after every check of the provider's
answer passed; `auth.OIDCAuthenticator` decides who that is in the class. docs/classroom.md, "Single sign-on".
"""

from __future__ import annotations

import ipaddress
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tritonlab.store.identities import DOMAIN

LEEWAY_S = 60  # clock difference allowed between this server and the provider (exp, iat, nbf)
MAX_LEEWAY_S = 300
DEFAULT_SCOPES = ("openid", "email", "profile")
FIELDS = {  # TOML key -> what it holds (the `--oidc-KEY` option and TRITONLAB_OIDC_KEY carry the same)
    "issuer": "the provider's issuer URL, exactly as its discovery document says",
    "client_id": "this class's client id at the provider",
    "client_secret": "the client secret (leave out for a public client: PKCE alone)",
    "client_secret_file": "a file holding the client secret",
    "scopes": "scopes to ask for (openid email profile by default)",
    "allowed_domains": "e-mail domains allowed in",
    "allowed_groups": "groups allowed in (any one)",
    "groups_claim": "the claim holding the groups (a dotted path, e.g. realm_access.roles)",
    "teacher_groups": "groups whose members are teachers",
    "only": "true: no password log-in and no password sign-up",
    "name": "the provider's name on the log-in button",
    "leeway_s": "seconds of clock difference tolerated",
}


class SSOError(Exception):
    """A log-in through the provider refused or impossible; `status` is the HTTP answer (401: not proven,
    403: proven but not allowed in, 502: the provider could not be used)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class SettingsError(ValueError):
    """The `--oidc-*` settings cannot work; the message says which and what to do."""


@dataclass(frozen=True)
class OIDCSettings:
    issuer: str
    client_id: str
    client_secret: str | None  # None: a public client, proven by PKCE alone
    redirect_uri: str  # <public url>/auth/callback
    post_logout_uri: str  # <public url>/login
    scopes: tuple[str, ...] = DEFAULT_SCOPES
    allowed_domains: tuple[str, ...] = ()
    allowed_groups: tuple[str, ...] = ()
    groups_claim: str = "groups"
    teacher_groups: tuple[str, ...] = ()
    only: bool = False
    name: str = "single sign-on"
    leeway_s: int = LEEWAY_S

    @property
    def discovery_url(self) -> str:
        return self.issuer.rstrip("/") + "/.well-known/openid-configuration"


@dataclass(frozen=True)
class Identity:
    """A provider's account as its verified ID token (and userinfo) describe it."""

    issuer: str
    subject: str
    email: str | None  # lower case, and only when the provider says it verified it
    name: str
    username_hint: str  # preferred_username, else the e-mail's local part ("" when neither)
    groups: tuple[str, ...] = field(default=())


def is_loopback_url(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_endpoint(url: object, what: str, issuer: str) -> str:
    """An endpoint URL from the provider: https, or plain http only on loopback beside a loopback issuer."""
    if not isinstance(url, str) or len(url) > 2048 or not url.startswith(("https://", "http://")):
        raise SSOError(502, f"the provider's {what} is not a URL: {str(url)[:100]!r}")
    parts = urlsplit(url)
    if not parts.hostname or "@" in parts.netloc:
        raise SSOError(502, f"the provider's {what} has no usable host: {url[:100]!r}")
    if parts.scheme != "https" and not (is_loopback_url(url) and is_loopback_url(issuer)):
        raise SSOError(502, f"the provider's {what} is not https: {url[:100]!r}")
    return url


def _list(value: object, key: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        items = value.replace(",", " ").split()
    elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value]
    else:
        raise SettingsError(f"oidc {key}: expected a list of names, not {value!r}")
    return tuple(dict.fromkeys(i for i in items if i))


def load_file(path: Path) -> dict:
    """The [oidc] table of a TOML file (or the whole file when it has none)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SettingsError(f"cannot read the OIDC settings file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path} is not valid TOML: {exc}") from None
    table = data.get("oidc", data)
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [oidc] must be a table")
    unknown = sorted(set(table) - set(FIELDS))
    if unknown:
        raise SettingsError(
            f"{path}: unknown OIDC setting(s) {', '.join(unknown)}; known: {', '.join(FIELDS)}"
        )
    return table


def build(values: dict, public_url: str | None) -> OIDCSettings | None:
    """Settings from `values` (file values overlaid by options; None or missing: unset), or None when no
    issuer is given (the class logs in with passwords only). SettingsError says what is wrong."""
    issuer = str(values.get("issuer") or "").strip()
    if not issuer:
        if any(values.get(k) not in (None, "", (), [], False) for k in FIELDS if k != "issuer"):
            raise SettingsError(
                "OIDC settings were given without --oidc-issuer: give the provider's issuer URL"
            )
        return None
    parts = urlsplit(issuer)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query or parts.fragment:
        raise SettingsError(f"--oidc-issuer must be the provider's https URL, not {issuer!r}")
    if parts.scheme == "http" and not is_loopback_url(issuer):
        raise SettingsError(
            f"--oidc-issuer must use https (plain http only on loopback, for tests): {issuer}"
        )
    client_id = str(values.get("client_id") or "").strip()
    if not client_id or len(client_id) > 255:
        raise SettingsError("--oidc-client-id is required: the client id the provider gave this class")
    if not public_url:
        raise SettingsError(
            "OIDC needs --public-url: the provider sends people back to <public-url>/auth/callback, "
            "which must be registered at the provider as a redirect URI"
        )
    secret = values.get("client_secret")
    secret_file = values.get("client_secret_file")
    if secret_file:
        try:
            secret = Path(str(secret_file)).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SettingsError(f"cannot read --oidc-secret-file {secret_file}: {exc.strerror}") from None
    scopes = _list(values.get("scopes"), "scopes") or DEFAULT_SCOPES
    if "openid" not in scopes:
        raise SettingsError("--oidc-scopes must include openid")
    domains = tuple(d.lower().lstrip("@") for d in _list(values.get("allowed_domains"), "allowed_domains"))
    bad = [d for d in domains if not DOMAIN.match(d)]  # the pattern e-mails are checked with
    if bad:
        raise SettingsError(f"--oidc-allowed-domain: {bad[0]!r} is not a domain name (example: uni.example)")
    groups = _list(values.get("allowed_groups"), "allowed_groups")
    if not domains and not groups:
        raise SettingsError(
            "say who may log in: --oidc-allowed-domain (e-mail domains) and/or --oidc-allowed-group; without "
            "either, every account of the provider could join the class"
        )
    leeway = values.get("leeway_s")
    leeway = LEEWAY_S if leeway in (None, "") else leeway
    if isinstance(leeway, bool) or not isinstance(leeway, int) or not 0 <= leeway <= MAX_LEEWAY_S:
        raise SettingsError(f"oidc leeway_s must be 0 to {MAX_LEEWAY_S} seconds, not {leeway!r}")
    only = values.get("only")
    if not isinstance(only, bool | None):
        raise SettingsError(f"oidc only must be true or false, not {only!r}")
    base = public_url.rstrip("/")
    return OIDCSettings(
        issuer=issuer,
        client_id=client_id,
        client_secret=str(secret) if secret else None,
        redirect_uri=base + "/auth/callback",
        post_logout_uri=base + "/login",
        scopes=scopes,
        allowed_domains=domains,
        allowed_groups=groups,
        groups_claim=str(values.get("groups_claim") or "groups").strip(),
        teacher_groups=_list(values.get("teacher_groups"), "teacher_groups"),
        only=bool(only),
        name=str(values.get("name") or "single sign-on").strip()[:60],
        leeway_s=leeway,
    )


def settings(options: dict, config_file: Path | None, public_url: str | None) -> OIDCSettings | None:
    """`serve`'s options (None: not given) over the TOML file's values."""
    values = load_file(config_file) if config_file else {}
    values.update({k: v for k, v in options.items() if v not in (None, (), [])})
    return build(values, public_url)
