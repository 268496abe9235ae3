"""CHILD side: record, per launch and per program id, the elements every tl.load / tl.store touched.

Hook points (the same names and positional order on Triton 3.6 through 3.9, checked against both sources):

- `InterpreterBuilder.create_masked_load(ptrs, mask, ...)` / `create_masked_store(ptrs, value, mask, ...)`:
  every memory access of the interpreter ends here — plain `create_load` / `create_store` build an all-true
  mask and call them, as do block pointers (3.6), tensor descriptors and atomic load/store. The trailing
  parameters differ between versions (3.6: cache_modifier, eviction_policy; 3.9: cache_policy), so the hooks
  find `ptrs` and `mask` by name through the original's signature.
- `InterpreterBuilder.create_atomic_rmw(op, ptr, val, mask, ...)`, `create_atomic_cas(ptr, ...)`: atomics.
- `InterpreterBuilder.set_grid_idx(x, y, z)`: the program about to run (also gives the execution order).
- `GridExecutor.__call__` (one launch) and `GridExecutor._init_args_hst` (the host copies of the arguments,
  whose addresses the kernel actually uses, next to the caller's tensors, which name their role).

Addresses are mapped back to (argument, element offset from its data_ptr). A lane is out of bounds when it is
active and its offset is not one of the tensor's elements. Guarded buffers (guards.py) put the memory just
outside every input and output inside the tensor's own storage, so such accesses are harmless and land in a
known place; an active lane outside every argument's storage is recorded and, by default, *not executed*
(its mask is cleared), so a wild pointer gives a red mark in the picture instead of a crashed child.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

SLACK_BYTES = 256 * 1024  # an address this close to an argument's storage is attributed to it
MAX_LANES = 2_000_000  # lanes kept per log; later accesses are counted, not kept
DENSE_LIMIT = 1 << 24  # above this many elements a view's element set is approximated by its extent

Describe = Callable[[Any], tuple[str, str] | None]
_ACTIVE: AccessLog | None = None


class _Span:
    """One tensor argument of a launch: where its elements are and where its storage is."""

    def __init__(self, index: int, name: str, host: Any, dev: Any, describe: Describe | None) -> None:
        self.index, self.name = index, name
        self.base = int(host.data_ptr())
        self.esize = int(host.element_size())
        storage = host.untyped_storage()
        self.lo = int(storage.data_ptr())
        self.hi = self.lo + int(storage.nbytes())
        self.shape = [int(d) for d in host.shape]
        self.strides = [int(s) for s in host.stride()]
        self.numel = int(host.numel())
        self.view = _view_offsets(self.shape, self.strides)
        role = describe(dev) if describe else None
        self.role, self.label = role or ("other", name)
        self.dtype = str(host.dtype).removeprefix("torch.")

    def in_view(self, off: np.ndarray, aligned: np.ndarray) -> np.ndarray:
        if self.view is None:  # dense: the elements are exactly offsets 0 .. numel-1
            return aligned & (off >= 0) & (off < self.numel)
        if isinstance(self.view, tuple):
            return aligned & (off >= self.view[0]) & (off <= self.view[1])
        pos = np.clip(np.searchsorted(self.view, off), 0, max(len(self.view) - 1, 0))
        return aligned & (self.view[pos] == off) if len(self.view) else np.zeros_like(aligned)

    def to_json(self) -> dict:
        return {
            "arg": self.name,
            "role": self.role,
            "label": self.label,
            "dtype": self.dtype,
            "shape": self.shape,
            "strides": self.strides,
            "element_size": self.esize,
            "numel": self.numel,
        }


def _view_offsets(shape: list[int], strides: list[int]) -> np.ndarray | tuple[int, int] | None:
    """Sorted element offsets of a view; None when they are exactly 0..numel-1; (min, max) when huge."""
    numel = int(np.prod(shape)) if shape else 1
    if numel == 0:
        return np.zeros(0, dtype=np.int64)
    if numel > DENSE_LIMIT:
        ends = [(d - 1) * s for d, s in zip(shape, strides, strict=True)]
        return (sum(e for e in ends if e < 0), sum(e for e in ends if e > 0))
    offs = np.zeros(1, dtype=np.int64)
    for d, s in zip(shape, strides, strict=True):
        offs = (offs[:, None] + np.arange(d, dtype=np.int64)[None, :] * s).ravel()
    offs = np.unique(offs)
    if len(offs) == numel and offs[0] == 0 and offs[-1] == numel - 1:
        return None
    return offs


class Launch:
    """One kernel launch: its tensor arguments and, per program in execution order, its accesses."""

    def __init__(self, kernel: str, log: AccessLog) -> None:
        self.kernel, self.log = kernel, log
        self.spans: list[_Span] = []
        self.scalars: dict[str, Any] = {}
        self.grid: list[int] = []
        self.programs: list[dict] = []
        self.current: dict | None = None
        self.error: str | None = None
        self.lanes = 0
        self.evicted = False  # its accesses were forgotten to stay within the log's lane budget

    def attach(
        self, names: list[str], args_dev: tuple, args_hst: list, kwargs: dict, kwargs_hst: dict
    ) -> None:
        pairs = list(zip(names, args_dev, args_hst, strict=False))
        pairs += [(k, kwargs.get(k), v) for k, v in kwargs_hst.items()]
        for name, dev, host in pairs:
            tensor = getattr(host, "base", host) if not hasattr(host, "untyped_storage") else host
            if hasattr(tensor, "untyped_storage") and hasattr(tensor, "data_ptr"):
                dev_t = getattr(dev, "base", dev) if not hasattr(dev, "untyped_storage") else dev
                self.spans.append(_Span(len(self.spans), name, tensor, dev_t, self.log.describe))
            elif isinstance(host, bool | int | float | str) or host is None:
                self.scalars[name] = host

    def start_program(self, pid: tuple[int, int, int]) -> None:
        self.current = {"pid": list(pid), "accesses": []}
        self.programs.append(self.current)

    def access(self, op: str, ptrs: Any, mask: Any) -> np.ndarray | None:
        """Record one access; return the mask to execute with (wild lanes cleared), or None to keep it."""
        addr = np.asarray(ptrs.data).astype(np.uint64).astype(np.int64).ravel()
        shape = list(np.shape(ptrs.data))
        active = (
            np.ones(addr.shape, dtype=bool)
            if mask is None
            else np.broadcast_to(np.asarray(mask.data, dtype=bool), np.shape(ptrs.data)).ravel()
        )
        chosen = self._attribute(addr, active)
        entry: dict[str, Any] = {
            "op": op,
            "shape": shape,
            "tensor": None,
            "offsets": None,
            "oob": [],
            "active": (active.astype(np.uint8) + ord("0")).tobytes().decode(),
        }
        wild = active & ~np.logical_or.reduce(
            [(addr >= sp.lo) & (addr < sp.hi) for sp in self.spans] or [active & False]
        )
        if chosen is not None:
            rel = addr - chosen.base
            off = rel // chosen.esize
            inside = chosen.in_view(off, rel % chosen.esize == 0)
            entry["tensor"], entry["offsets"] = chosen.index, off.tolist()
            entry["oob"] = np.flatnonzero(active & ~inside).tolist()
        else:
            entry["oob"] = np.flatnonzero(active).tolist()
        suppress = self.log.suppress_wild and mask is not None and bool(wild.any())
        if suppress:
            entry["suppressed"] = np.flatnonzero(wild).tolist()
        self.log.keep(self, entry, len(addr))
        return (active & ~wild).reshape(np.shape(ptrs.data)) if suppress else None

    def _attribute(self, addr: np.ndarray, active: np.ndarray) -> _Span | None:
        """The tensor most lanes belong to: in its elements > in its storage > near its storage."""
        if not self.spans:
            return None
        scores = np.zeros((len(self.spans), len(addr)), dtype=np.int8)
        for k, span in enumerate(self.spans):
            rel = addr - span.base
            inview = span.in_view(rel // span.esize, rel % span.esize == 0)
            storage = (addr >= span.lo) & (addr < span.hi)
            near = (addr >= span.lo - SLACK_BYTES) & (addr < span.hi + SLACK_BYTES)
            scores[k] = np.where(inview, 3, np.where(storage, 2, np.where(near, 1, 0)))
        best = scores.argmax(axis=0)
        ok = scores.max(axis=0) > 0
        lanes = ok & active if (ok & active).any() else ok
        if not lanes.any():
            return None
        votes = np.bincount(best[lanes], minlength=len(self.spans))
        return self.spans[int(votes.argmax())]

    def to_json(self) -> dict:
        return {
            "kernel": self.kernel,
            "grid": self.grid,
            "tensors": [s.to_json() for s in self.spans],
            "scalars": self.scalars,
            "programs": self.programs,
            "error": self.error,
            "evicted": self.evicted,
        }


class AccessLog:
    """Everything recorded while active: launches in order. `describe(tensor)` names a tensor's role."""

    def __init__(
        self, describe: Describe | None = None, max_lanes: int = MAX_LANES, suppress_wild: bool = True
    ) -> None:
        self.describe, self.max_lanes, self.suppress_wild = describe, max_lanes, suppress_wild
        self.launches: list[Launch] = []
        self.current: Launch | None = None
        self.lanes = 0
        self.dropped = 0

    def keep(self, launch: Launch, entry: dict, lanes: int) -> None:
        """Keep an access; over the lane budget, forget earlier launches first (autotuning's trial runs),
        then drop this one's later accesses."""
        if launch.current is None:
            launch.start_program((0, 0, 0))
        for old in self.launches:
            if self.lanes + lanes <= self.max_lanes or old is launch:
                break
            if old.lanes:
                self.lanes -= old.lanes
                old.lanes, old.evicted = 0, True
                for program in old.programs:
                    program["accesses"] = []
        if self.lanes + lanes > self.max_lanes:
            self.dropped += 1
            return
        self.lanes += lanes
        launch.lanes += lanes
        assert launch.current is not None
        launch.current["accesses"].append(entry)

    def to_json(self) -> dict:
        import triton

        return {
            "triton": triton.__version__,
            "launches": [launch.to_json() for launch in self.launches],
            "lanes": self.lanes,
            "truncated": self.dropped > 0,
            "dropped_accesses": self.dropped,
        }


# ---- the hooks --------------------------------------------------------------------------------------------


def _access_hook(original: Callable, op: str, ptr_name: str, mask_name: str | None) -> Callable:
    signature = inspect.signature(original)

    @functools.wraps(original)
    def hook(self: Any, *args: Any, **kwargs: Any) -> Any:
        log = _ACTIVE
        launch = log.current if log is not None else None
        if launch is not None:
            bound = signature.bind(self, *args, **kwargs)
            mask = bound.arguments.get(mask_name) if mask_name else None
            new_mask = launch.access(op, bound.arguments[ptr_name], mask)
            if new_mask is not None and mask is not None:
                bound.arguments[mask_name] = type(mask)(new_mask, mask.dtype)  # type: ignore[index]
                return original(*bound.args, **bound.kwargs)
        return original(self, *args, **kwargs)

    hook.__tritonlab_viz__ = original  # type: ignore[attr-defined]
    return hook


def _grid_idx_hook(original: Callable) -> Callable:
    @functools.wraps(original)
    def hook(self: Any, x: int, y: int, z: int) -> Any:
        result = original(self, x, y, z)
        launch = _ACTIVE.current if _ACTIVE is not None else None
        if launch is not None:
            launch.start_program((int(x), int(y), int(z)))
        return result

    hook.__tritonlab_viz__ = original  # type: ignore[attr-defined]
    return hook


def _call_hook(original: Callable) -> Callable:
    @functools.wraps(original)
    def hook(self: Any, *args: Any, **kwargs: Any) -> Any:
        log = _ACTIVE
        if log is None:
            return original(self, *args, **kwargs)
        from triton.runtime.interpreter import interpreter_builder

        launch = Launch(getattr(self.fn, "__name__", "kernel"), log)
        log.launches.append(launch)
        log.current = launch
        try:
            return original(self, *args, **kwargs)
        except BaseException as exc:
            launch.error = f"{type(exc).__name__}: {exc}"[:500]
            raise
        finally:
            launch.grid = [int(g) for g in getattr(interpreter_builder, "grid_dim", ())]
            log.current = None

    hook.__tritonlab_viz__ = original  # type: ignore[attr-defined]
    return hook


def _args_hook(original: Callable) -> Callable:
    @functools.wraps(original)
    def hook(self: Any, args_dev: tuple, kwargs: dict) -> Any:
        result = original(self, args_dev, kwargs)
        launch = _ACTIVE.current if _ACTIVE is not None else None
        if launch is not None:
            args_hst, kwargs_hst = result
            launch.attach(list(self.arg_names), tuple(args_dev), list(args_hst), kwargs, kwargs_hst)
        return result

    hook.__tritonlab_viz__ = original  # type: ignore[attr-defined]
    return hook


def install() -> None:
    """Patch the interpreter's classes (idempotent). The hooks do nothing unless a log is active."""
    from triton.runtime.interpreter import GridExecutor, InterpreterBuilder

    patches: list[tuple[type, str, Callable[[Callable], Callable]]] = [
        (InterpreterBuilder, "create_masked_load", lambda f: _access_hook(f, "load", "ptrs", "mask")),
        (InterpreterBuilder, "create_masked_store", lambda f: _access_hook(f, "store", "ptrs", "mask")),
        (InterpreterBuilder, "create_atomic_rmw", lambda f: _access_hook(f, "atomic", "ptr", "mask")),
        (InterpreterBuilder, "create_atomic_cas", lambda f: _access_hook(f, "atomic", "ptr", None)),
        (InterpreterBuilder, "set_grid_idx", _grid_idx_hook),
        (GridExecutor, "__call__", _call_hook),
        (GridExecutor, "_init_args_hst", _args_hook),
    ]
    for cls, name, make in patches:
        original = cls.__dict__.get(name)
        if original is not None and not hasattr(original, "__tritonlab_viz__"):
            setattr(cls, name, make(original))


@contextmanager
def recording(log: AccessLog) -> Iterator[AccessLog]:
    """Record every interpreted launch inside the block into `log` (TRITON_INTERPRET=1 must be set)."""
    global _ACTIVE
    install()
    previous, _ACTIVE = _ACTIVE, log
    try:
        yield log
    finally:
        _ACTIVE = previous
        log.current = None
