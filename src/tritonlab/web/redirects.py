"""Where a page may send the browser next: `same_origin_path(target)` keeps a `next` target only when it is a
path on this server, and answers "/" for anything else.

Browsers are generous readers of a `Location` or `window.location`: `/\\evil.example` and `/<TAB>/evil.example`
both land on evil.example (a backslash counts as a slash, tabs and newlines are dropped), and a target that
arrives percent-encoded (`/%5Cevil.example`, `/%2F%2Fevil.example`) is one decoding away from the same. So the
rule is narrow and positive: one leading slash, then only the characters a path of ours can hold, and the same
must hold after each of up to three rounds of percent-decoding. The course's own paths (`/`, `/lessons/05-…`,
`/teacher`, `/lessons/x?tab=quiz`) all pass.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

HOME = "/"
# What a same-origin target may hold: unreserved characters, sub-delimiters and `:@/?=&%#`. No backslash, no
# whitespace or control character, nothing outside ASCII.
_PATH = re.compile(r"/(?![/\\])[A-Za-z0-9._~!$&'()*+,;=:@/?%#-]*")
_DECODE_ROUNDS = 3


def same_origin_path(target: object) -> str:
    """`target` when it is a path on this server (see the module's docstring), else "/"."""
    if not isinstance(target, str) or len(target) > 2048:
        return HOME
    seen = target
    for _ in range(_DECODE_ROUNDS + 1):
        if not _PATH.fullmatch(seen):
            return HOME
        decoded = unquote(seen, errors="replace") if "%" in seen else seen
        if decoded == seen:
            return target
        if not decoded.startswith("/"):
            return HOME
        seen = decoded
    return HOME  # still changing after three rounds: nobody writes links like that
