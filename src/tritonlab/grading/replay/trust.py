"""What the replay takes from the host: the values of a launch record that the check child's process chose.

The record comes from the process that ran the learner's host code, so every value in it that is not a
tensor of the case is a channel for a result the host computed. Three are judged here, in the replay child,
before any event runs (docs/grader.md, "What the replay trusts"):

- **constant allocations and fills** (`torch.zeros`/`full`, `fill_`/`zero_`): the value must be one the
  exercise's `[host]` policy lists under `fills` (default: zero, which says nothing about the inputs), and a
  fill must cover a whole allocation (where a partial fill lands is a choice of the host's too);
- **integer launch arguments** (constexpr or not): |v| ≤ 256; sizes, strides and offsets of the case's
  tensors and of the record's views, the case's declared integers, the file's own literals, powers of two,
  the grids; their quotients, ceiling quotients and remainders; and one sum, difference or product of two
  of those (`cdiv(M, BM) * cdiv(N, BN)`);
- **float launch arguments**: the case's declared scalars (eps, p, scale), the file's literals, a few
  constants (log2(e), ln 2, ±inf ...) and the case's sizes, through one common function (1/x, √x, 1/√x,
  x·log2(e), 1 − x, 1/(1 − x), ...) and at most one product or quotient of two such values.

Booleans, None and `tl.dtype`s carry at most a few bits and pass; strings must be literals of the file.
Anything else is `Refused`, which the parent reports as `host-computed`.
"""

from __future__ import annotations

import ast
import bisect
import math
from typing import Any

from tritonlab.grading.replay import Refused
from tritonlab.i18n import t

MAX_LITERALS = 512  # a file's own numbers taken as constants (a longer file's tail adds none)
SMALL_INT = 256  # integers this small pass as they are (chunk counts, group sizes: a few bits each)
REL_TOL = 1e-6  # a float argument may be rounded through float32 on the host (2**-24 ≈ 6e-8)
LOG2E, LN2 = 1.4426950408889634, 0.6931471805599453


def file_literals(source: str) -> tuple[set[int], set[float], set[str]]:
    """Numbers and strings written in the file (a file's literals do not depend on a case's inputs)."""
    ints: set[int] = set()
    floats: set[float] = set()
    strings: set[str] = set()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ints, floats, strings
    for node in ast.walk(tree):
        if len(ints) + len(floats) + len(strings) >= MAX_LITERALS:
            break
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                continue
            if isinstance(v, int) and abs(v) < 1 << 64:
                ints.add(v)
                ints.add(-v)
            elif isinstance(v, float):
                floats.add(v)
                floats.add(-v)
            elif isinstance(v, str) and len(v) <= 64:
                strings.add(v)
    return ints, floats, strings


def _scalars(spec: Any, ints: set[int], floats: set[float], depth: int = 0) -> None:
    """The case's declared scalars (job specs {"value": ...}, lists of them included)."""
    if depth > 4:
        return
    if isinstance(spec, dict) and "value" in spec:
        spec = spec["value"]
    if isinstance(spec, bool) or spec is None:
        return
    if isinstance(spec, int):
        ints.add(spec)
    elif isinstance(spec, float):
        floats.add(spec)
    elif isinstance(spec, (list, tuple)):
        for s in spec[:64]:
            _scalars(s, ints, floats, depth + 1)


def _tensor_ints(spec: Any, out: set[int]) -> None:
    """Shape, strides and element count of a record's tensor spec (a view of the record's buffers). Not its
    storage offset, nor the size of a dimension with stride 0: the host picks those freely (`buf[v:]`,
    `as_strided((v,), (0,))`) without a buffer to match, so they could carry any integer."""
    if not isinstance(spec, dict):
        return
    shape = spec.get("shape") if isinstance(spec.get("shape"), list) else []
    stride = spec.get("stride") if isinstance(spec.get("stride"), list) else []
    pairs = [(d, s) for d, s in zip(shape[:8], stride[:8], strict=False) if type(d) is int and type(s) is int]
    out.update(d for d, s in pairs if s != 0)
    out.update(s for _d, s in pairs)
    if len(pairs) == len(shape) and all(s != 0 for _d, s in pairs):
        out.add(math.prod(d for d, _s in pairs))


class HostValues:
    """The values one case's record may carry from the host, and the check of each."""

    def __init__(self, source_literals: tuple, case: dict, record: dict, views: list, fills: list) -> None:
        lit_ints, lit_floats, self.strings = source_literals
        declared_ints: set[int] = set()
        declared_floats: set[float] = set()
        declared = case.get("declared") if isinstance(case.get("declared"), list) else []
        for spec in [*case.get("args", []), *case.get("kwargs", {}).values(), *declared[:64]]:
            _scalars(spec, declared_ints, declared_floats)
        sizes: set[int] = set()
        for v in views:  # the case's inputs as the check child received them
            sizes.update(int(d) for d in v.shape)
            sizes.update(int(s) for s in v.stride())
            sizes.update((int(v.numel()), int(v.storage_offset())))
        self.sizes = sizes | declared_ints
        ints = {-1, 0, 1, 2} | {1 << k for k in range(41)} | lit_ints | self.sizes
        for event in record.get("events", [])[:4096] if isinstance(record.get("events"), list) else []:
            if not isinstance(event, dict):
                continue
            if isinstance(event.get("grid"), list):
                ints.update(g for g in event["grid"][:3] if type(g) is int)
            for spec in [*(event.get("args") or [])[:64], *(event.get("kwargs") or {}).values()][:128]:
                if isinstance(spec, dict):
                    _tensor_ints(spec.get("tensor"), ints)
            for key in ("dst", "src"):
                _tensor_ints(event.get(key), ints)
        for spec in record.get("outputs", [])[:64] if isinstance(record.get("outputs"), list) else []:
            _tensor_ints(spec, ints)
        self.ints = ints
        self._level1: set[int] | None = None
        self._seen: dict[tuple[str, float], bool] = {}
        base = declared_floats | lit_floats | {0.0, 1.0, -1.0, 2.0, 0.5, LOG2E, LN2, math.e, math.pi}
        base |= {float(d) for d in self.sizes if 0 < abs(d) < 1 << 53}
        one = set()
        for x in base:
            one.update(_unary(x))
        self.floats = sorted(v for v in one if math.isfinite(v))
        self.fills = [f for f in fills if isinstance(f, (int, float)) and not isinstance(f, bool)] or [0]

    # ---- integers -----------------------------------------------------------------------------------------

    def int_ok(self, v: int) -> bool:
        if v in self.ints or abs(v) <= SMALL_INT:
            return True
        if ("i", v) not in self._seen:
            self._seen["i", v] = self._int_pair(v)
        return self._seen["i", v]

    def _quotients(self) -> set[int]:
        """The base integers and every quotient, ceiling quotient and remainder of two of them (built on first
        need: most arguments are base integers)."""
        if self._level1 is None:
            base = sorted(self.ints)
            level = set(base)
            for a in base:
                for b in base:
                    if b > 0:
                        level.update((a // b, -(-a // b), a % b))
            self._level1 = level
        return self._level1

    def _int_pair(self, v: int) -> bool:
        """One sum, difference or product of two quotients of base integers (`cdiv(M, BM) * cdiv(N, BN)`)."""
        level = self._quotients()
        if v in level:
            return True
        for a in level:
            if v - a in level or (a not in (0, 1, -1) and v % a == 0 and v // a in level):
                return True
        return False

    # ---- floats -------------------------------------------------------------------------------------------

    def _near(self, v: float) -> bool:
        i = bisect.bisect_left(self.floats, v - abs(v) * REL_TOL)
        return i < len(self.floats) and self.floats[i] <= v + abs(v) * REL_TOL

    def float_ok(self, v: float) -> bool:
        if math.isinf(v) or math.isnan(v) or v == 0.0 or self._near(v):
            return True
        if ("f", v) not in self._seen:
            self._seen["f", v] = self._float_pair(v)
        return self._seen["f", v]

    def _float_pair(self, v: float) -> bool:
        for a in self.floats:  # one product or quotient of two derived values
            if a != 0.0 and (self._near(v / a) or self._near(v * a)):
                return True
        return False

    # ---- the record's values --------------------------------------------------------------------------------

    def check_scalar(self, value: Any, where: str) -> None:
        """A launch's non-tensor argument: refused when the host could have computed it from the inputs."""
        if value is None or isinstance(value, bool) or type(value).__name__ == "dtype":
            return
        if isinstance(value, int):
            if self.int_ok(value):
                return
            raise Refused(t("grader.trust_int", where=where, value=value))
        if isinstance(value, float):
            if self.float_ok(value):
                return
            raise Refused(t("grader.trust_float", where=where, value=repr(value)))
        if isinstance(value, str) and value in self.strings:
            return
        raise Refused(t("grader.trust_other", where=where, type=type(value).__name__))

    def check_constant(self, value: float, where: str) -> None:
        """A constant allocation's or a fill's value: zero, or a value the exercise's [host] policy lists."""
        if value == 0 or any(value == f or (math.isnan(value) and math.isnan(f)) for f in self.fills):
            return
        allowed = ", ".join(repr(f) for f in self.fills)
        raise Refused(t("grader.trust_fill", where=where, value=repr(value), allowed=allowed))


def _unary(x: float) -> list[float]:
    """x through each common function a host applies to a declared scalar or a size."""
    out = [x, -x, x * LOG2E, x * LN2, x / LOG2E, x * x, 1.0 - x]
    with_inverse = [x, x * LOG2E, x * LN2]
    if x != 0.0:
        out += [1.0 / v for v in with_inverse if v != 0.0]
    if x != 1.0:
        out.append(1.0 / (1.0 - x))
    if x > 0.0:
        r = math.sqrt(x)
        out += [r, 1.0 / r, LOG2E / r, math.log(x), math.log2(x), 1.0 / math.log(x) if x != 1.0 else 0.0]
    if abs(x) < 700:
        out.append(math.exp(x))
    return out


def covers(spec: dict, numel: int, guard: int, itemsize: int, view_itemsize: int) -> bool:
    """Whether a tensor spec is exactly the interior of a guarded allocation (every element once)."""
    shape, stride, offset = spec.get("shape"), spec.get("stride"), spec.get("offset")
    if not isinstance(shape, list) or not isinstance(stride, list) or type(offset) is not int:
        return False
    if math.prod(shape) * view_itemsize != numel * itemsize or offset * view_itemsize != guard * itemsize:
        return False
    expected = 1
    for size, step in sorted((p for p in zip(shape, stride, strict=False) if p[0] != 1), key=lambda p: p[1]):
        if step != expected:
            return False
        expected *= size
    return True
