"""Which line of the learner's file did it: the `where` of a failure.

Two sides:

* CHILD (interpreter only): `install_access_log()` watches every `tl.load` / `tl.store` the interpreter runs.
  An access with an active lane on a guarded buffer's memory that is not one of its tensor's elements (the
  guard regions, or the gaps of a strided layout) is a stray access; the kernel line that made it, the
  operation and the tensor are kept in the active recorder (`Recorder.strays`). `grid_line(file, line)` names
  the line that computed a launch's grid. Both choose which line a failure shows; one more use: a load with
  lanes off the allocation itself fails its case (`outside`, judged in `check/judge.py:judge_reads`) even when a masked
  store threw the values away — the read is out of bounds all the same.
* PARENT: `return_line(file, function)` for a function that launched nothing, and `def_line`.

No torch import at module level: the parent imports this module.
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_VALID_ELEMENTS = 1 << 26  # larger buffers are not mapped element by element (interpreter cases are small)
MAX_STRAYS = 32  # distinct (op, line, tensor) entries kept per case


# ---- child: stray accesses on the interpreter ---------------------------------------------------------


def valid_elements(g: Any) -> Any:
    """A bool array over the guarded buffer `g`: True at the elements of its tensor (cached on `g`)."""
    import numpy as np

    cached = getattr(g, "_valid", None)
    if cached is not None:
        return cached
    total = int(g.buffer.numel())
    if total > MAX_VALID_ELEMENTS or g.geometry is None:
        g._valid = False
        return False
    shape, strides, offset = g.geometry
    valid = np.zeros(total, dtype=bool)
    offs = np.zeros(1, dtype=np.int64)
    for d, s in zip(shape, strides, strict=True):
        offs = (offs[:, None] + np.arange(d, dtype=np.int64)[None, :] * s).ravel()
    if all(d > 0 for d in shape):
        valid[offs + g.guard + offset] = True
    g._valid = valid
    return valid


SLACK = 4096  # elements watched on each side of a host copy of an input (its neighbours are not guarded)


def _dense(g: Any, lo: int, esize: int) -> tuple[int, int] | None:
    """The address range [start, end) that holds only the tensor's own elements, when they are contiguous."""
    shape, strides, offset = g.geometry
    expect, acc = [], 1
    for d in reversed(shape):
        expect.insert(0, acc)
        acc *= max(d, 1)
    if any(s != e for d, s, e in zip(shape, strides, expect, strict=True) if d > 1):
        return None
    start = lo + (g.guard + offset) * esize
    return (start, start + g.numel * esize) if g.numel == acc else None


def _regions(rec: Any) -> list[tuple]:
    """(first address, element size, valid-element mask, elements before the tensor's start, label) of every
    buffer the case knows: the guarded inputs and allocations, and the host's layout copies of inputs.
    Cached on the recorder until a buffer is added."""
    import numpy as np

    stamp = (len(rec.input_guards), len(rec.allocations), len(rec.trace))
    cached_regions = getattr(rec, "_regions", None)
    if cached_regions is not None and cached_regions[0] == stamp:
        return cached_regions[1]

    out = []
    for g in [*rec.input_guards, *rec.allocations]:
        valid = valid_elements(g)
        if valid is not False:
            lo, esize = int(g.buffer.data_ptr()), int(g.buffer.element_size())
            out.append((lo, esize, valid, g.guard, g.label, _dense(g, lo, esize)))
    for event in rec.trace:
        if event[0] != "copy" or not event[1].is_contiguous():
            continue
        target = event[1]
        cached = getattr(rec, "_copies", {})
        rec._copies = cached
        key = target.data_ptr()
        if key not in cached:
            valid = np.zeros(target.numel() + 2 * SLACK, dtype=bool)
            valid[SLACK : SLACK + target.numel()] = True
            name = rec.input_name(event[2]) or "an input"
            esize = target.element_size()
            dense = (key, key + target.numel() * esize)
            cached[key] = (key - SLACK * esize, esize, valid, SLACK, f"the host's copy of `{name}`", dense)
        out.append(cached[key])
    rec._regions = (stamp, out)
    return out


def note_access(rec: Any, op: str, ptrs: Any, mask: Any, line: Callable[[], str]) -> None:
    """Record the stray lanes of one interpreted access, blamed on the learner's innermost line (`line()`).

    A lane is stray when it lands in a watched region (a guarded buffer, or the slack around a host copy)
    but on none of the known tensors' own elements: the slack around a copy is memory the harness does not
    own, so another tensor may sit there, and a lane on that tensor's elements is a correct access. Of the
    stray lanes, `outside` counts those off the allocation itself (the guard regions, or past either end of a
    host copy) rather than in the gaps of a strided layout: `check/judge.py:judge_reads` fails a load that made any."""
    import numpy as np

    addr = np.asarray(ptrs.data).view(np.int64).ravel()
    if mask is None:
        active = np.ones(addr.shape, dtype=bool)
        lanes = addr
    else:
        active = np.broadcast_to(np.asarray(mask.data, dtype=bool), np.shape(ptrs.data)).ravel()
        lanes = addr[active]
    if not lanes.size:
        return
    low, high = int(lanes.min()), int(lanes.max())
    near = []
    for region in _regions(rec):
        lo, esize, valid, _front, _label, dense = region
        if high < lo or low >= lo + len(valid) * esize:
            continue  # nowhere near this buffer
        if dense is not None and dense[0] <= low and high < dense[1]:
            return  # every lane on one tensor's own contiguous elements: the common case, kept cheap
        near.append(region)
    # lanes accounted for: first those on an element of some known tensor; then each stray lane, once, on the
    # first region that watches it (guarded ones first)
    accounted = np.zeros(addr.shape, dtype=bool)
    looked = []
    for lo, esize, valid, front, label, _dense in near:
        lanes_here = np.flatnonzero(active & (addr >= lo) & (addr < lo + len(valid) * esize))
        rel = addr[lanes_here] - lo
        index = rel // esize
        accounted[lanes_here[(rel % esize == 0) & valid[index]]] = True
        looked.append((lanes_here, index, front, label))
    for lanes_here, index, front, label in looked:
        bad = ~accounted[lanes_here]
        accounted[lanes_here[bad]] = True
        count = int(np.count_nonzero(bad))
        if not count:
            continue
        where = line()
        key = (op, where, label)
        # outside the allocation itself (the guards, or past a host copy), not in the gaps of its layout: an
        # out-of-bounds access even when nothing it read reaches the output
        rel_index = index[bad] - front
        size = len(valid) - 2 * front  # the allocation's own elements
        outside = rel_index[(rel_index < 0) | (rel_index >= size)]
        for entry in rec.strays:
            if (entry["op"], entry["where"], entry["tensor"]) == key:
                entry["lanes"] += count
                if outside.size and not entry["outside"]:
                    entry["first_outside"] = int(outside[0])
                entry["outside"] += int(outside.size)
                break
        else:
            if len(rec.strays) < MAX_STRAYS:
                rec.strays.append(
                    {
                        "op": op,
                        "where": where,
                        "tensor": label,
                        "lanes": count,
                        "first": int(rel_index[0]),
                        "outside": int(outside.size),
                        "first_outside": int(outside[0]) if outside.size else None,
                        "size": int(size),
                    }
                )


def _wrap(
    original: Any, op: str, mask_position: int, recorder: Callable[[], Any], line: Callable[[], str]
) -> Any:
    params = list(inspect.signature(original).parameters)[1:]  # without self

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        rec = recorder()
        if rec is not None:
            ptrs = args[0] if args else kwargs.get(params[0])
            mask = args[mask_position] if len(args) > mask_position else kwargs.get("mask")
            try:
                note_access(rec, op, ptrs, mask, line)
            except Exception:  # noqa: BLE001 - a diagnostic never changes what the kernel does
                pass
        return original(self, *args, **kwargs)

    wrapper.__tritonlab_original__ = original  # type: ignore[attr-defined]
    return wrapper


def install_access_log(recorder: Callable[[], Any], line: Callable[[], str]) -> None:
    """Watch the interpreter's loads and stores (no-op without the interpreter; idempotent): while
    `recorder()` gives the active guards.Recorder, stray lanes go to its `strays`, blamed on `line()`."""
    try:
        from triton.runtime.interpreter import InterpreterBuilder
    except ImportError:  # pragma: no cover - a Triton without the interpreter
        return
    for name, op in (("create_masked_load", "load"), ("create_masked_store", "store")):
        original = getattr(InterpreterBuilder, name, None)
        if original is None or hasattr(original, "__tritonlab_original__"):
            continue
        params = list(inspect.signature(original).parameters)[1:]
        if not params or "mask" not in params:
            continue
        setattr(InterpreterBuilder, name, _wrap(original, op, params.index("mask"), recorder, line))


# ---- both sides: lines from the learner's source, read as text ------------------------------------------


@functools.lru_cache(maxsize=8)
def _tree(path: str, mtime: float) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None


def parse(file: str | Path) -> ast.Module | None:
    try:
        mtime = Path(file).stat().st_mtime
    except OSError:
        return None
    return _tree(str(file), mtime)


def split(where: str) -> tuple[str, int] | None:
    """("file", line) from "file:line"."""
    path, _, number = where.rpartition(":")
    return (path, int(number)) if path and number.isdigit() else None


def _enclosing_function(tree: ast.Module, line: int) -> ast.FunctionDef | None:
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno <= line <= (
            node.end_lineno or node.lineno
        ):
            if best is None or node.lineno > best.lineno:
                best = node
    return best


def grid_line(where: str) -> str:
    """See `_grid_line`; never raises (a diagnostic must not change what the learner's run does)."""
    try:
        return _grid_line(where)
    except Exception:  # noqa: BLE001
        return where


@functools.lru_cache(maxsize=256)  # a launch in a loop asks again for the same line (the file is a snapshot)
def _grid_line(where: str) -> str:
    """For the launch at `where` ("file:line" of `kernel[grid](...)`), the line that computed the grid: the
    subscript itself when it is written inline, else the last assignment of that name before the launch in
    the same function. `where` unchanged when the source does not say more."""
    parts = split(where)
    tree = parse(parts[0]) if parts else None
    if not parts or tree is None:
        return where
    path, line = parts
    launch = None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Subscript)
            and node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            launch = node.func
            break
    if launch is None:
        return where
    grid = launch.slice
    if not isinstance(grid, ast.Name):
        return f"{path}:{grid.lineno}"
    scope = _enclosing_function(tree, line) or tree
    found = None
    for node in ast.walk(scope):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        if (
            targets
            and node.lineno < launch.lineno
            and any(isinstance(t, ast.Name) and t.id == grid.id for t in targets)
        ):
            if found is None or node.lineno > found:
                found = node.lineno
    return f"{path}:{found or grid.lineno}"


def return_line(file: str | Path, function: str) -> str:
    """ "file:line" of the last `return <value>` of the top-level `function` ("" if there is none)."""
    tree = parse(file)
    if tree is None:
        return ""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            returns = [
                n.lineno
                for n in ast.walk(node)
                if isinstance(n, ast.Return)
                and n.value is not None
                and _enclosing_function(node, n.lineno) is node
            ]
            return f"{file}:{max(returns)}" if returns else ""
    return ""
