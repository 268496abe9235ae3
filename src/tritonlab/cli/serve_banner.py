"""What `serve --classroom` prints: the address people open and the class's log-in and join URLs."""

from __future__ import annotations

import socket

from tritonlab.i18n import t

WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def base_url(host: str, port: int, public_url: str | None = None) -> str:
    """The address people open: `--public-url` when given, else the bound address (a wildcard bind names this
    machine by its host name; loopback stays loopback)."""
    if public_url:
        return public_url.rstrip("/")
    if host in WILDCARD_HOSTS:
        shown = socket.gethostname() or "127.0.0.1"
    else:
        shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}"


def classroom_banner(room, base: str, language: str) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]
    """What `serve --classroom` prints: the class, where everyone logs in and the join link, as full URLs
    (no token: a class logs in with accounts). Returns (the log-in URL, the lines)."""
    klass = room.the_class() or {}
    login = base + "/login"
    lines = [
        t("serve.classroom", language, name=klass.get("name", "?"), where=room.where),
        t("serve.classroom_login", language),
        f"    {login}",
    ]
    if klass.get("join_code"):
        state = "serve.classroom_join_open" if klass.get("join_open") else "serve.classroom_join_closed"
        lines += [t(state, language), f"    {base}/join/{klass['join_code']}"]
    return login, lines
