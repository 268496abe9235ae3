"""Safety by default, on Jupyter's model: a token exchanged for a cookie, Host and Origin checks, no CORS.

- Every request needs the token: as `?token=` on a page (exchanged for an HttpOnly, SameSite=Strict cookie and
  redirected away so it leaves the address bar), as the cookie, or as `Authorization: Bearer <token>`.
- The Host header must name an allowed host (defeats DNS rebinding); on a wildcard bind any host is allowed.
- A state-changing request (POST/PUT/PATCH/DELETE) carrying the cookie must come from this origin: its
  Origin (or Referer) must be exactly the request's scheme, Host and port. Bearer-token requests are exempt:
  browsers never add that header across sites, and no CORS headers are ever sent, so a preflight fails.
- Request bodies are capped; every response gets a strict Content-Security-Policy with a per-request nonce.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Iterable
from http.cookies import SimpleCookie
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tritonlab.config import MAX_SOURCE_BYTES
from tritonlab.i18n import t

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
MAX_BODY_BYTES = 2 * 1024 * 1024
MAX_JSON_DEPTH = 64  # the API's bodies nest two levels; Python's json parser fails past ~1000
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def new_token() -> str:
    return secrets.token_urlsafe(24)


def cookie_name(token: str) -> str:
    # Cookies ignore ports: a name derived from the token keeps two servers on one machine apart.
    return "tritonlab_" + hashlib.sha256(token.encode()).hexdigest()[:10]


def cookie_value(token: str) -> str:
    return hmac.new(token.encode(), b"tritonlab-session", hashlib.sha256).hexdigest()


_PORT = r"(?::(?P<port>[0-9]{1,5}))?"
_HOST_NAME = re.compile(
    r"(?P<name>(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)" + _PORT
)
_HOST_IPV6 = re.compile(r"\[(?P<name>[0-9a-f:.]+)\]" + _PORT)


def host_name(host_header: str) -> str | None:
    """The host named by a Host header, strictly: '127.0.0.1:8000' -> '127.0.0.1', '[::1]:80' -> '::1',
    'localhost' -> 'localhost'. None for anything that is not a hostname or an IP literal with an optional
    numeric port ('127.0.0.1:8801@evil.com', 'a b', '::1' without brackets, a port over 65535, ...)."""
    import ipaddress

    host = host_header.lower()
    match = _HOST_IPV6.fullmatch(host)
    if match:
        try:
            ipaddress.IPv6Address(match["name"])
        except ValueError:
            return None
    else:
        match = _HOST_NAME.fullmatch(host)
        if match is None or len(match["name"]) > 253:
            return None
    port = match["port"]
    if port is not None and not 0 < int(port) <= 65535:
        return None
    return match["name"]


def same_secret(given: str, expected: str) -> bool:
    """Whether a secret a request sent equals ours, in constant time. `hmac.compare_digest` raises TypeError on
    text with a non-ASCII character (a request holding one was a 500); as UTF-8 bytes any text compares."""
    sent, ours = given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    return hmac.compare_digest(sent, ours)


def csp(nonce: str) -> str:
    return (
        "default-src 'self'; script-src 'self'; "
        f"style-src 'self' 'nonce-{nonce}'; img-src 'self' data:; connect-src 'self'; "
        "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


class Guard:
    """ASGI middleware: authentication, Host/Origin checks, body cap and security headers."""

    def __init__(
        self,
        app: ASGIApp,
        token: str,
        allowed_hosts: Iterable[str] | None = LOOPBACK_HOSTS,
        max_body: int = MAX_BODY_BYTES,
        lang: str = "en",
    ) -> None:
        self.app = app
        self.lang = lang  # the server's language; a browser's remembered choice (web/lang.py) wins
        self.token = token
        self.cookie = cookie_name(token)
        self.cookie_value = cookie_value(token)
        self.allowed = None if allowed_hosts is None else {h.lower().strip("[]") for h in allowed_hosts}
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        nonce = secrets.token_urlsafe(12)
        scope.setdefault("state", {})["nonce"] = nonce
        method = scope["method"]
        host = headers.get("host", "")
        path = scope.get("path", "/")
        is_api = path.startswith("/api/")

        lang = self._lang(headers)
        name = host_name(host)
        if (host and name is None) or (self.allowed is not None and name not in self.allowed):
            await self._deny(send, 403, "host", is_api, nonce, lang, host=host)
            return

        # The body first, with or without the token, on every route: over the cap (announced, or sent chunked
        # and read up to the cap) a 413, nested too deep a 422; never read past the cap.
        if self._announced_too_large(headers):
            await self._deny(send, 413, "too_large", True, nonce, lang, **self.too_large_fmt())
            return
        checked = await self._read_checked_body(scope, headers, receive, send, nonce, lang, is_api)
        if checked is None:
            return
        receive = checked

        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if method == "GET" and "token" in query and not is_api:
            if same_secret(query["token"], self.token):
                await self._exchange(scope, send, query)
            else:
                await self._deny(send, 401, "wrong_token", is_api, nonce, lang)
            return

        bearer = headers.get("authorization", "")
        by_header = bearer.startswith("Bearer ") and same_secret(bearer[7:].strip(), self.token)
        by_cookie = same_secret(self._cookie(headers), self.cookie_value)
        if not (by_header or by_cookie):
            await self._deny(send, 401, "token_needed", is_api, nonce, lang)
            return

        scheme = scope.get("scheme", "http")
        if method in UNSAFE_METHODS and not by_header and not self._same_scheme(headers, scheme):
            await self._deny(send, 403, "cross_origin", is_api, nonce, lang)
            return
        if method in UNSAFE_METHODS and not by_header and not self._same_origin(headers, host):
            await self._deny(send, 403, "cross_origin", is_api, nonce, lang)
            return

        await self.app(scope, self._capped(receive), self._with_headers(send, nonce))

    # ---- the body ------------------------------------------------------------------------------------------

    def too_large_fmt(self) -> dict[str, int]:
        """The figures the 413 message names: the body cap and the learner's file cap, in KiB."""
        return {"kib": self.max_body // 1024, "code_kib": MAX_SOURCE_BYTES // 1024}

    def _announced_too_large(self, headers: dict[str, str]) -> bool:
        length = headers.get("content-length", "")
        return length.isdigit() and int(length) > self.max_body

    async def _read_checked_body(
        self,
        scope: Scope,
        headers: dict[str, str],
        receive: Receive,
        send: Send,
        nonce: str,
        lang: str,
        is_api: bool,
    ) -> Receive | None:
        """Read a request's body here (at most the cap), so that one sent without Content-Length (chunked) and
        past the cap gets the same 413 as one that announced its size, and JSON nested too deep a clear
        refusal (FastAPI would answer a bare 400 "There was an error parsing the body" to both). Returns the
        channel to hand the app (the body replayed), or None once this answered the request."""
        length = headers.get("content-length")
        if not (
            scope["method"] in UNSAFE_METHODS or "transfer-encoding" in headers or (length and length != "0")
        ):
            return receive
        body = await self._read_body(receive)
        if body is None:
            await self._deny(send, 413, "too_large", True, nonce, lang, **self.too_large_fmt())
            return None
        ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if (not ctype or ctype == "application/json" or ctype.endswith("+json")) and json_too_deep(
            body, MAX_JSON_DEPTH
        ):
            await self._deny(send, 422, "too_deep", is_api, nonce, lang, depth=MAX_JSON_DEPTH)
            return None
        return self._replay(body, receive)

    # ---- pieces ----------------------------------------------------------------------------------------

    def _cookie(self, headers: dict[str, str], name: str | None = None) -> str:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header authenticates nothing
            return ""
        morsel = jar.get(name or self.cookie)
        return morsel.value if morsel else ""

    def _lang(self, headers: dict[str, str]) -> str:
        """The language of refusals: the browser's remembered choice (web/lang.py), else the server's."""
        from tritonlab.web.lang import COOKIE, valid

        choice = self._cookie(headers, COOKIE)
        return choice if valid(choice) else self.lang

    def _same_origin(self, headers: dict[str, str], host: str) -> bool:
        """Whether the Origin (else the Referer) names the host and port of the Host header, exactly."""
        parts = origin_parts(headers)
        if parts is None:
            return False
        return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()

    @staticmethod
    def _same_scheme(headers: dict[str, str], scheme: str) -> bool:
        """Whether the Origin (else the Referer) has the request's scheme: http://host is not https://host's
        origin (a page a network attacker can serve under the same name). Behind a TLS proxy the request's
        scheme is https only when a trusted proxy says so (X-Forwarded-Proto; web/proxy.py)."""
        parts = origin_parts(headers)
        return parts is not None and parts.scheme == scheme

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole request body, or None once it grows past the cap (the rest is never read)."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: nothing to answer
                return b"".join(chunks)
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    @staticmethod
    def _replay(body: bytes, receive: Receive) -> Receive:
        """Hand the body already read to the app in one message; then the real channel (disconnects)."""
        sent = False

        async def replayed() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replayed

    def _capped(self, receive: Receive) -> Receive:
        seen = 0

        async def wrapped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise BodyTooLarge()
            return message

        return wrapped

    def _with_headers(self, send: Send, nonce: str) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = security_headers(nonce)
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (k, v) for k, v in extra if k not in present
                ]
            await send(message)

        return wrapped

    async def _exchange(self, scope: Scope, send: Send, query: dict[str, str]) -> None:
        rest = {k: v for k, v in query.items() if k != "token"}
        target = scope.get("path", "/") + ("?" + urlencode(rest) if rest else "")
        cookie = f"{self.cookie}={self.cookie_value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000"
        headers = [
            (b"location", target.encode("latin-1")),
            (b"set-cookie", cookie.encode("latin-1")),
            (b"cache-control", b"no-store"),
            (b"referrer-policy", b"no-referrer"),
        ]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def _deny(
        self, send: Send, status: int, what: str, as_json: bool, nonce: str, lang: str, /, **fmt: object
    ) -> None:
        """Refuse with the [web.guard] message `what` in `lang`; JSON's "reason" stays English (a stable
        value for programs), its "error" is for people."""
        detail = t(f"web.guard.{what}", lang, **fmt)
        if as_json:
            body = json.dumps({"error": detail, "reason": t(f"web.guard.{what}_title", "en")}).encode()
            ctype = b"application/json"
        else:
            title = t(f"web.guard.{what}_title", lang)
            body = DENY_PAGE.format(nonce=nonce, lang=lang, title=_esc(title), detail=_esc(detail)).encode()
            ctype = b"text/html; charset=utf-8"
        headers = [
            (b"content-type", ctype),
            (b"content-length", str(len(body)).encode()),
            *[(k, v) for k, v in security_headers(nonce)],
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def origin_parts(headers: dict[str, str]) -> SplitResult | None:
    """The request's Origin header, else its Referer, as a URL; None when there is none, it is `null`, or it
    does not parse (`http://[::1` makes urlsplit raise: a refusal, never a 500)."""
    origin = headers.get("origin") or headers.get("referer") or ""
    if not origin or origin == "null":
        return None
    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError:
        return None
    return parts


_JSON_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)


def json_too_deep(body: bytes, limit: int) -> bool:
    """Whether JSON text nests arrays/objects more than `limit` deep (brackets inside strings do not count).
    Python's json parser gives up on deep nesting with a RecursionError; this refuses it first, clearly."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    for match in _JSON_TOKENS.finditer(body):
        char = match.group()[:1]
        if char in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif char in (b"]", b"}"):
            depth -= 1
    return False


class BodyTooLarge(Exception):
    """A request body (sent without Content-Length) grew past the cap; answered with 413 by the app."""


DENY_PAGE = """<!doctype html><html lang="{lang}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>tritonlab: {title}</title>
<style nonce="{nonce}">body{{font:17px/1.6 system-ui,sans-serif;max-width:36rem;margin:15vh auto;padding:0 1.25rem;
color:#1b2130;background:#f6f6f3}}h1{{font-size:1.4rem}}code{{background:#e9ebef;padding:0 .3em;border-radius:4px}}
@media (prefers-color-scheme:dark){{body{{color:#e3e7ee;background:#0e1117}}code{{background:#1b212b}}}}</style>
</head><body><h1>tritonlab: {title}</h1><p>{detail}</p></body></html>"""


def security_headers(nonce: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-security-policy", csp(nonce).encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"same-origin"),
        (b"cross-origin-opener-policy", b"same-origin"),
        (b"cross-origin-resource-policy", b"same-origin"),
    ]


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def is_loopback(host: str) -> bool:
    import ipaddress

    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
