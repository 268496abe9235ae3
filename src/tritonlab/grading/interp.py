"""A faster patching step for Triton's interpreter, in the grading children only (TRITON_INTERPRET=1).

Triton 3.9's interpreter patches triton.language before every launch and again on every call of a library
`@jit` function inside a kernel (`tl.max`, `tl.sum`: once per program instance). Each patch lists every member
of triton.language, of its tensor class and of tl.math with `inspect.getmembers` to find the builtins to wrap —
about a third of a softmax check's time on the interpreter. The members a patch can wrap are always the same
names (a builtin, or the interpreter's own wrapper around one), so this remembers those names per namespace and
wraps the ones that are builtins now, with the interpreter's own `_patch_attr`, in the same (sorted) order:
the same effect without the listing. Where this Triton's internals differ, nothing is changed.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

_NAMES: dict[int, tuple[Any, list[str]]] = {}  # id(namespace) -> (namespace, names it may wrap)


def _wraps_builtin(value: Any, is_builtin: Any) -> bool:
    """A builtin, or the interpreter's wrapper around one (`lambda *a, member=builtin, **kw`)."""
    if is_builtin(value):
        return True
    defaults = getattr(value, "__kwdefaults__", None)
    return isinstance(defaults, dict) and bool(is_builtin(defaults.get("member")))


def install() -> bool:
    """Swap the interpreter's `_patch_builtin` for the remembering one; True when installed."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return False
    try:
        from triton.language import core
        from triton.runtime import interpreter

        original = interpreter._patch_builtin
        patch_attr = interpreter._patch_attr
        if list(inspect.signature(original).parameters) != ["pkg", "builder", "scope"]:
            return False
    except (ImportError, AttributeError, TypeError, ValueError):
        return False
    if getattr(original, "__tritonlab__", False):
        return True
    is_builtin = core.is_builtin

    def patch_builtin(pkg: Any, builder: Any, scope: Any) -> None:
        known = _NAMES.get(id(pkg))
        if known is None or known[0] is not pkg:
            names = [name for name, member in inspect.getmembers(pkg) if _wraps_builtin(member, is_builtin)]
            known = _NAMES[id(pkg)] = (pkg, names)
        for name in known[1]:
            member = getattr(pkg, name, None)
            if is_builtin(member):
                patch_attr(pkg, name, member, builder, scope)

    patch_builtin.__tritonlab__ = True  # type: ignore[attr-defined]
    interpreter._patch_builtin = patch_builtin
    return True
