"""Guard regions and poisoned outputs — the CHILD side, and the `Recorder` every child-side watcher fills.

Every input the grader hands to a learner lives inside a larger buffer whose other bytes hold a known
"input guard" pattern; every output the learner allocates with a torch factory (`torch.empty`,
`empty_like`, `zeros`, …) is carved out of a buffer whose guard regions hold an "output guard" pattern and
whose interior (for `empty*`) holds a poison pattern. Afterwards any changed guard byte is an
out-of-bounds write, an output element still equal to the poison was never written, and an output element
equal to the input guard was read from outside the input. None of this depends on Triton's internals, so it
works on the interpreter and on a GPU, for every Triton version.

The active `Recorder` (`activate`, `paused`) also collects what launches.py (every kernel launch, and the
launch record a fresh replay redoes) and torch_ops.py (the aten ops of the learner's host code) see.

This is teaching feedback, not a security boundary: the verdict is computed in the parent.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from tritonlab.grading.contracts import layout_geometry
from tritonlab.grading.patterns import INPUT_GUARD, OUTPUT_GUARD, POISON

GUARD_BYTES = 256 * 1024  # per side: enough for a missing mask with BLOCK_SIZE up to 64K fp32

_BITS_DTYPE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_TORCH_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
    "int32": torch.int32,
    "int64": torch.int64,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
    "float8_e4m3fn": torch.float8_e4m3fn,
}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def torch_dtype(name: str) -> torch.dtype:
    return _TORCH_DTYPES[name]


def _as_bits(t: torch.Tensor) -> torch.Tensor:
    """Reinterpret a tensor's elements as signed integers of the same width."""
    if t.dtype == torch.bool:
        return t.view(torch.uint8)
    return t.view(_BITS_DTYPE[t.element_size()])


def _signed(pattern: int, nbytes: int) -> int:
    bits = nbytes * 8
    return pattern - (1 << bits) if nbytes > 1 and pattern >= 1 << (bits - 1) else pattern


def fill_pattern(t: torch.Tensor, pattern: dict[str, int]) -> None:
    name = dtype_name(t.dtype)
    _as_bits(t).fill_(_signed(pattern[name], t.element_size()))


@dataclass
class Guarded:
    """One guarded buffer: [front guard | interior | back guard], all of one dtype."""

    label: str
    buffer: torch.Tensor  # 1-D, whole allocation
    guard: int  # elements per side
    numel: int  # interior elements
    guard_pattern: dict[str, int]
    # How a fresh replay re-creates this allocation: "poison" (`empty*`), the raw bits of the constant a
    # `zeros`/`ones`/`full` filled it with, or None when it cannot be re-created from a record.
    init: Any = None
    # The tensor's place in the buffer (shape, strides, offset from the interior's start), when known: which
    # buffer elements are the tensor's own (grading/where.py tells stray accesses from real ones with it).
    geometry: tuple | None = None

    @property
    def interior(self) -> torch.Tensor:
        return self.buffer[self.guard : self.guard + self.numel]

    def view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> torch.Tensor:
        """A strided view into the interior (as_strided's offset counts from the storage's start)."""
        start = self.buffer.storage_offset() + self.guard + offset
        return self.buffer.as_strided(shape, strides, start)

    def violations(self) -> dict[str, Any] | None:
        """Guard elements that no longer hold the guard pattern, as offsets from the interior's start."""
        name = dtype_name(self.buffer.dtype)
        expected = _signed(self.guard_pattern[name], self.buffer.element_size())
        bits = _as_bits(self.buffer)
        head, tail = bits[: self.guard], bits[self.guard + self.numel :]
        if not bool((head != expected).any()) and not bool((tail != expected).any()):
            return None  # the common case, without listing indices
        front = (head != expected).nonzero().flatten()
        back = (tail != expected).nonzero().flatten()
        before = sorted(int(i) - self.guard for i in front.tolist())
        after = sorted(self.numel + int(i) for i in back.tolist())
        return {
            "label": self.label,
            "numel": self.numel,
            "count": len(before) + len(after),
            "before": before[-8:],
            "after": after[:8],
        }


def guarded_empty(
    numel: int,
    dtype: torch.dtype,
    device: torch.device | str,
    label: str,
    guard_pattern: dict[str, int],
    interior_pattern: dict[str, int] | None,
) -> Guarded:
    elem = torch.empty((), dtype=dtype).element_size()
    guard = max(1, GUARD_BYTES // elem)
    buffer = torch.empty(numel + 2 * guard, dtype=dtype, device=device)
    fill_pattern(buffer, guard_pattern)
    g = Guarded(label, buffer, guard, numel, guard_pattern)
    if interior_pattern is not None and numel:
        fill_pattern(g.interior, interior_pattern)
    return g


# ---- layouts: how an input's logical values sit in memory (geometry: contracts.layout_geometry) ---------


def make_input(values: torch.Tensor, layout: str, device: str, label: str) -> tuple[torch.Tensor, Guarded]:
    """A tensor equal to `values` with the given layout, living inside an input-guard buffer."""
    shape = tuple(values.shape)
    strides, offset, extent = layout_geometry(shape, layout)
    g = guarded_empty(extent, values.dtype, device, label, INPUT_GUARD, INPUT_GUARD)
    view = g.view(shape, strides, offset)
    g.geometry = (shape, tuple(strides), offset)
    if values.numel():
        view.copy_(values.to(device))
    return view, g


# ---- output allocations: torch factories return guarded, poisoned memory ------------------------------

_FACTORIES = (
    "empty",
    "empty_like",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "empty_strided",
)
_METHODS = ("new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided")


@dataclass
class Recorder:
    """Everything the harness watches while the learner's function runs."""

    allocations: list[Guarded] = field(default_factory=list)
    launches: list[dict] = field(default_factory=list)
    torch_ops: list[str] = field(default_factory=list)
    paused: int = 0
    inputs: dict[int, str] = field(default_factory=dict)  # storage pointer of each argument -> its name
    host_copies: list[dict] = field(default_factory=list)  # copies of an argument the host code made
    op_where: dict[str, str] = field(default_factory=dict)  # first learner line that ran each flagged op
    # What the grader can redo without the learner's Python: launches (kernel, concrete grid, the same
    # argument objects), layout copies of arguments and fills, in the order they happened.
    trace: list[tuple] = field(default_factory=list)
    host_hooks: list[str] = field(default_factory=list)  # autotuned kernels with hooks that are host code
    # autotune configs that give another result than the chosen one (launches.check_configs)
    config_mismatches: list[dict] = field(default_factory=list)
    input_guards: list[Guarded] = field(default_factory=list)  # the case's inputs (for where.note_access)
    strays: list[dict] = field(default_factory=list)  # accesses off a tensor's elements, by kernel line

    def input_name(self, t: Any) -> str | None:
        if not isinstance(t, torch.Tensor):
            return None
        return self.inputs.get(t.untyped_storage().data_ptr())

    def owner_of(self, t: torch.Tensor) -> Guarded | None:
        ptr = t.untyped_storage().data_ptr()
        for g in self.allocations:
            if g.buffer.untyped_storage().data_ptr() == ptr:
                return g
        return None


_ACTIVE: Recorder | None = None


def _guard_result(res: Any, poison: bool) -> Any:
    rec = _ACTIVE
    if rec is None or rec.paused or not isinstance(res, torch.Tensor) or res.numel() == 0:
        return res
    if res.requires_grad or res.dtype not in _TORCH_DTYPES.values():
        return res
    rec.paused += 1
    try:
        strides, shape = res.stride(), tuple(res.shape)
        extent = sum((d - 1) * s for d, s in zip(shape, strides, strict=True)) + 1
        g = guarded_empty(
            extent,
            res.dtype,
            res.device,
            f"output #{len(rec.allocations) + 1}",
            OUTPUT_GUARD,
            POISON if poison else None,
        )
        view = g.view(shape, strides)
        g.geometry = (shape, tuple(strides), 0)
        if poison:
            g.init = "poison"
        else:
            view.copy_(res)
            bits = _as_bits(res.detach()).reshape(-1)
            first = int(bits[0].item())
            g.init = {"bits": first} if bool((bits == first).all().item()) else None
        rec.allocations.append(g)
        return view
    finally:
        rec.paused -= 1


def guarded_copy(t: torch.Tensor, label: str) -> torch.Tensor:
    """A copy of `t` in a new guarded allocation that the active recorder owns (for contracts that keep
    several results of one call, e.g. one per autotuning config). Not recorded as a learner op."""
    with paused():
        g = guarded_empty(max(t.numel(), 1), t.dtype, t.device, label, OUTPUT_GUARD, None)
        view = g.view(tuple(t.shape), _contiguous_strides(tuple(t.shape)))
        view.copy_(t)
    if _ACTIVE is not None:
        _ACTIVE.allocations.append(g)
    return view


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return tuple(strides)


def _wrap_factory(fn: Any, poison: bool) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _guard_result(fn(*args, **kwargs), poison)

    wrapper.__tritonlab_original__ = fn  # type: ignore[attr-defined]
    return wrapper


def install_factories() -> None:
    """Replace torch's allocation functions with guarded versions (idempotent; child process only)."""
    for name in _FACTORIES:
        fn = getattr(torch, name)
        if not hasattr(fn, "__tritonlab_original__"):
            setattr(torch, name, _wrap_factory(fn, poison=name.startswith("empty")))
    for name in _METHODS:
        fn = getattr(torch.Tensor, name)
        if not hasattr(fn, "__tritonlab_original__"):
            setattr(torch.Tensor, name, _wrap_factory(fn, poison=name.startswith("new_empty")))


LEARNER_FILE = ""  # the file being graded (set by the harness); ops are blamed on its innermost line


def learner_line() -> str:
    """`file:line` of the innermost frame of the learner's file on the current stack ("" if none)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == LEARNER_FILE:
            return f"{LEARNER_FILE}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


class paused:
    """Context manager: the grader's own torch work (building inputs, snapshots) is neither guarded as a
    learner allocation nor recorded as a learner op."""

    def __enter__(self) -> None:
        self.rec = _ACTIVE
        if self.rec is not None:
            self.rec.paused += 1

    def __exit__(self, *exc: object) -> None:
        if self.rec is not None:
            self.rec.paused -= 1


def activate(rec: Recorder | None) -> None:
    global _ACTIVE
    _ACTIVE = rec


def to_bits_numpy(t: torch.Tensor) -> np.ndarray:
    """An output as a contiguous numpy array of raw bits (bf16 has no numpy dtype; bits travel safely)."""
    t = t.detach().contiguous()
    if t.is_floating_point():
        t = _as_bits(t)
    return t.cpu().numpy()


def from_numpy_storage(arr: np.ndarray, dtype: str) -> torch.Tensor:
    """Inverse of the parent's encoding: float16/32/64 and ints travel as themselves, bf16 as uint16 bits,
    fp8 as uint8 bits."""
    t = torch.from_numpy(np.ascontiguousarray(arr).reshape(arr.shape))  # ascontiguousarray makes 0-d 1-d
    if dtype == "bfloat16":
        return t.view(torch.int16).view(torch.bfloat16)
    if dtype == "float8_e4m3fn":
        return t.view(torch.uint8).view(torch.float8_e4m3fn)
    return t


def ceil_log2(n: int) -> int:
    return 0 if n <= 1 else math.ceil(math.log2(n))


def stray_threads(before: set[int]) -> list[str]:
    """Python threads started during the call that are still running."""
    # A `_DummyThread` is a thread Python did not start (torch's autograd device threads, which run a custom
    # Function's backward on a GPU): not the learner's. Threads started with `_thread` are not listed either;
    # both are judged by the replay, which does not have them.
    return [
        t.name
        for t in threading.enumerate()
        if t.is_alive()
        and t.ident not in before
        and not isinstance(t, threading._DummyThread)
        and not _library_monitor(t)
    ]


def _library_monitor(thread: threading.Thread) -> bool:
    """tqdm's monitor thread, which torch.compile's Inductor starts through tqdm (it failed autograd-wrap's
    solution on the H200 run 2026-12-04 (bda3280)). Known by its class object from the real tqdm module and its
    unchanged `run`: it runs tqdm's monitor loop and nothing of the learner's (a subclass that overrides `run`,
    or a class merely named alike, is still counted)."""
    monitor = getattr(sys.modules.get("tqdm._monitor"), "TMonitor", None)
    return monitor is not None and type(thread) is monitor and type(thread).run is monitor.run
