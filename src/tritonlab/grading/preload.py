"""What every grading child would otherwise pay for itself, done once in the zygote before it forks.

Measured on the H200 (H200 run 2026-12-02 (accb35e): the children's cProfile): a GPU child's first
kernel launch spent 0.33–0.41 s in Triton's `triton_key()` (a SHA-256 over Triton's own sources and
libtriton, the prefix of every compile-cache key; cached per process) and ~0.1 s importing
`triton.experimental.gluon`, which the code generator imports on its first compile. Both depend only on the
installed Triton, never on a run: computed in the zygote, every child forked from it inherits them (~0.5 s
less for each of a check's two children).

Also here: Triton 3.6's interpreter turns a scalar into a Python int with `int(array)`, which NumPy ≥ 2.4
refuses for a 1-element 1-D array ("only 0-dimensional arrays can be converted to Python scalars"), so any
`for k in range(0, K, BLOCK_K)` over a kernel argument fails there. `fix_interpreter_index` sets the same
`__index__` that Triton 3.9 uses (squeeze first) after the interpreter's own patch. Where Triton's internals
differ, nothing is changed.
"""

from __future__ import annotations

import functools
import os
from typing import Any


def zygote_preload() -> dict[str, Any]:
    """Run in the zygote after its imports: what was done (for its ready line)."""
    done: dict[str, Any] = {"interpreter_index": fix_interpreter_index()}
    if os.environ.get("TRITON_INTERPRET") == "1":
        return done  # the interpreter compiles nothing: no cache key, no code generator
    try:
        import triton.experimental.gluon.language  # noqa: F401 - imported by the code generator's first compile

        done["gluon"] = True
    except Exception:  # noqa: BLE001 - an older or newer Triton without it: a child imports what it needs
        done["gluon"] = False
    done["triton_key"] = _triton_key()
    return done


def _triton_key() -> bool:
    try:
        from triton.runtime import cache
    except ImportError:
        return False
    key = getattr(cache, "triton_key", None)
    if key is None or not hasattr(key, "cache_info"):  # only a per-process cached key is worth computing here
        return False
    try:
        key()
    except Exception:  # noqa: BLE001 - a child computes it itself, and meets the same error where it matters
        return False
    return True


def fix_interpreter_index() -> bool:
    """Wrap Triton's `_patch_lang_tensor` so that a scalar tensor's `__index__` squeezes before `int()`."""
    try:
        from triton.runtime import interpreter
    except Exception:  # noqa: BLE001 - no interpreter in this Triton
        return False
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None:
        return False
    if getattr(original, "__tritonlab__", False):
        return True

    @functools.wraps(original)
    def patch_lang_tensor(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    patch_lang_tensor.__tritonlab__ = True  # type: ignore[attr-defined]
    interpreter._patch_lang_tensor = patch_lang_tensor
    return True
