"""One output's values judged in the parent (`compare_values`): shape, dtype and device, then unwritten elements
(the poison still there), values read from an input's guard, NaN/Inf, and the tolerance; with diagnostics in
Triton's terms (which program and lane, which kernel line, which grid axis was too small). A helper of
compare.py, whose `judge` calls it and which re-exports it to the contracts."""

from __future__ import annotations

import numpy as np

from tritonlab.grading.contracts import Case, decode, unsigned_bits
from tritonlab.grading.patterns import INPUT_GUARD, POISON
from tritonlab.i18n import t
from tritonlab.models import Failure

SHOW = 5  # mismatching elements shown per failure


def block_size(result: dict) -> int | None:
    """The BLOCK-like constexpr of the first launch, if the learner passed one by keyword."""
    for launch in result.get("launches", []):
        for name, value in launch.get("constexprs", {}).items():
            if "BLOCK" in name and value > 0:
                return int(value)
    return None


def owner(index: int, block: int | None) -> str:
    return f" (program {index // block}, lane {index % block})" if block else ""


def fmt(v: float) -> str:
    if np.isnan(v):
        return "nan"
    return f"{v:.6g}"


def index_str(flat: int, shape: tuple[int, ...]) -> str:
    if len(shape) <= 1:
        return f"[{flat}]"
    return "[" + ", ".join(str(i) for i in np.unravel_index(flat, shape)) + "]"


def stray_line(result: dict, op: str, tensor: str | None = None) -> str:
    """The kernel line (interpreter's access log) whose `op` ("load"/"store") touched memory outside a
    tensor's elements — on `tensor` when that one is known, else on any ("" when none was recorded)."""
    strays = [s for s in result.get("strays", []) if isinstance(s, dict) and s.get("op") == op]
    for s in strays:
        if tensor is None or s.get("tensor") == tensor:
            return str(s.get("where") or "")
    return str(strays[0].get("where") or "") if strays else ""


OOB_READ_CAUSE = t("grader.oob_read_cause")


def grid_size(grid: list) -> int:
    """Programs a launch started: the product of every grid axis (a grid of (1, n) starts n of them)."""
    return int(np.prod(grid)) if grid else 0


Tol = float | np.ndarray


def compare_values(
    case: Case,
    result: dict,
    expected: np.ndarray,
    out_dtype: str,
    rtol: Tol,
    atol: Tol,
    *,
    output_index: int = 0,
    expected_shape: tuple[int, ...] | None = None,
    cause_hint: str = "",
    nan_is_oob_read: bool = False,
    label: str = "",
) -> list[Failure]:
    """Shape, dtype, unwritten, out-of-bounds reads, NaN/Inf and value checks for one output.

    `rtol`/`atol` are scalars or per-element arrays of the expected's shape. `nan_is_oob_read`: the op cannot
    make a NaN from these (finite, moderate) inputs, so a NaN where the reference is finite was read from the
    NaN-filled guard memory around an input. `label` prefixes messages (e.g. which config made the output).
    """
    outputs = result.get("outputs", [])
    fn = result.get("function", "your function")
    if output_index >= len(outputs):
        return [
            Failure(
                case.name,
                "wrong-result",
                t("grader.not_a_tensor", fn=fn, returned=result.get("returned", "nothing")),
                t("grader.return_output"),
            )
        ]
    meta = outputs[output_index]
    raw = result["arrays"][output_index]
    shape = tuple(expected.shape if expected_shape is None else expected_shape)
    if tuple(meta["shape"]) != shape:
        return [
            Failure(
                case.name,
                "wrong-shape",
                t("grader.wrong_shape", got=tuple(meta["shape"]), want=shape),
                t("grader.wrong_shape_cause"),
            )
        ]
    if meta["dtype"] != out_dtype:
        return [
            Failure(
                case.name,
                "wrong-dtype",
                t("grader.wrong_dtype", got=meta["dtype"], want=out_dtype),
                t("grader.wrong_dtype_cause"),
            )
        ]
    if meta.get("device_type") and meta["device_type"] != result.get("device_type", meta["device_type"]):
        return [
            Failure(
                case.name,
                "wrong-result",
                t("grader.wrong_device", got=meta["device_type"], want=result.get("device_type")),
                t("grader.wrong_device_cause"),
            )
        ]
    flat_expected = np.asarray(expected, dtype=np.float64).reshape(-1)
    if flat_expected.size == 0:
        return []
    bits = unsigned_bits(raw, out_dtype).reshape(-1)
    actual = decode(raw, out_dtype).reshape(-1)
    block = block_size(result)
    failures: list[Failure] = []
    pre = f"{label}: " if label else ""

    poison = POISON.get(out_dtype)
    unwritten = (
        np.flatnonzero(bits == poison) if poison is not None and meta.get("guarded") else np.array([], int)
    )
    if unwritten.size:
        first = int(unwritten[0])
        shown = ", ".join(
            index_str(int(i), shape) + owner(int(i), block if len(shape) == 1 else None)
            for i in unwritten[:SHOW]
        )
        cause, grid_error = (
            unwritten_cause(unwritten, flat_expected.size, block, result)
            if len(shape) <= 1
            else unwritten_cause_2d(unwritten, shape)
        )
        if len(shape) > 1 and not grid_error and block:  # a flat kernel over an n-d tensor: its flat tail
            flat_cause, flat_grid = unwritten_cause(unwritten, flat_expected.size, block, result)
            if flat_grid:
                cause, grid_error = flat_cause, flat_grid
        launches = result.get("launches", [])
        failures.append(
            Failure(
                case.name,
                "unwritten-output",
                pre
                + t(
                    "grader.unwritten",
                    count=unwritten.size,
                    total=flat_expected.size,
                    first=index_str(first, shape),
                    shown=shown,
                ),
                cause,
                str(launches[0].get("grid_where", "")) if grid_error and launches else "",
            )
        )
        return failures

    guard = INPUT_GUARD.get(out_dtype)
    oob = np.flatnonzero(bits == guard) if guard is not None else np.array([], int)
    if oob.size:
        shown = ", ".join(index_str(int(i), shape) for i in oob[:SHOW])
        failures.append(
            Failure(
                case.name,
                "out-of-bounds-read",
                pre + t("grader.oob_read", count=oob.size, shown=shown),
                OOB_READ_CAUSE,
                stray_line(result, "load"),
            )
        )
        return failures

    # A GPU check's outputs reach 2²⁴ elements, judged in the server for every check: when every expected and
    # actual value is finite (the usual case) the NaN/Inf analysis below has nothing to find, and the scalar
    # tolerances need no arrays of their own. The verdict is the same either way.
    finite: np.ndarray | None = None
    if not (np.isfinite(flat_expected).all() and np.isfinite(actual).all()):
        before = len(failures)
        finite = _nan_inf_failures(
            case, result, flat_expected, actual, shape, failures, pre, cause_hint, nan_is_oob_read
        )
        if len(failures) > before:
            return failures
    bad, bad_err, bad_bound = _outside_tolerance(
        actual, flat_expected, np.shape(expected), rtol, atol, finite
    )
    if bad.size:
        shown = "; ".join(
            f"{index_str(int(i), shape)}{owner(int(i), block if len(shape) == 1 else None)}: "
            f"expected {fmt(flat_expected[i])}, got {fmt(actual[i])}"
            for i in bad[:SHOW]
        )
        j = int(np.argmax(bad_err / np.maximum(bad_bound, 1e-300)))
        k = int(bad[j])
        at, error, allowed = index_str(k, shape), f"{bad_err[j]:.3g}", f"{bad_bound[j]:.2g}"
        if flat_expected[k]:
            relative = f"{bad_err[j] / abs(flat_expected[k]):.2g}"
            worst = t("grader.worst_relative", at=at, error=error, relative=relative, allowed=allowed)
        else:
            worst = t("grader.worst", at=at, error=error, allowed=allowed)
        failures.append(
            Failure(
                case.name,
                "wrong-result",
                pre + t("grader.differ", count=bad.size, total=flat_expected.size, worst=worst, shown=shown),
                cause_hint,
            )
        )
    return failures


CHUNK = 1 << 18  # elements judged at a time: the temporaries stay in the CPU's cache instead of new pages


def _outside_tolerance(
    actual: np.ndarray,
    flat_expected: np.ndarray,
    shape: tuple[int, ...],
    rtol: Tol,
    atol: Tol,
    finite: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The flat indices where |actual - expected| > atol + rtol·|expected| (or is NaN), among the reference's
    finite elements (`finite`; None: all), with the error and the bound at each. `rtol`/`atol` are scalars or
    arrays of `shape`, the reference array's own. In chunks of CHUNK elements."""
    scalar = np.ndim(rtol) == 0 and np.ndim(atol) == 0
    if not scalar:
        rt = np.broadcast_to(np.asarray(rtol, dtype=np.float64), shape).reshape(-1)
        at = np.broadcast_to(np.asarray(atol, dtype=np.float64), shape).reshape(-1)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for lo in range(0, flat_expected.size, CHUNK):
        hi = lo + CHUNK
        exp = flat_expected[lo:hi]
        err = actual[lo:hi] - exp
        np.abs(err, out=err)
        if scalar:
            bound = np.abs(exp)
            bound *= float(rtol)
            bound += float(atol)
        else:
            bound = at[lo:hi] + rt[lo:hi] * np.abs(exp)
        outside = np.less_equal(err, bound)
        np.logical_not(outside, out=outside)
        if finite is not None:
            outside &= finite[lo:hi]
        idx = np.flatnonzero(outside)
        if idx.size:
            found.append((idx + lo, err[idx], bound[idx]))
    if not found:
        empty = np.array([], dtype=np.float64)
        return np.array([], dtype=np.intp), empty, empty
    return tuple(np.concatenate(parts) for parts in zip(*found, strict=True))  # type: ignore[return-value]


def _nan_inf_failures(
    case: Case,
    result: dict,
    flat_expected: np.ndarray,
    actual: np.ndarray,
    shape: tuple[int, ...],
    failures: list[Failure],
    pre: str,
    cause_hint: str,
    nan_is_oob_read: bool,
) -> np.ndarray:
    """Where a NaN or an infinity is not where the reference has it: a failure appended to `failures` (a NaN
    read from an input's guard, or a NaN/Inf mismatch). Returns the mask of the reference's finite elements, the
    only ones the tolerance judges."""
    exp_nan, act_nan = np.isnan(flat_expected), np.isnan(actual)
    exp_inf, act_inf = np.isinf(flat_expected), np.isinf(actual)
    bad_nan = np.flatnonzero(exp_nan != act_nan)
    bad_inf = np.flatnonzero(
        ~exp_nan & ~act_nan & ((exp_inf != act_inf) | (exp_inf & (np.sign(flat_expected) != np.sign(actual))))
    )
    if bad_nan.size or bad_inf.size:
        idx = np.concatenate([bad_nan, bad_inf])[:SHOW]
        shown = "; ".join(
            f"{index_str(int(i), shape)}: expected {fmt(flat_expected[i])}, got {fmt(actual[i])}" for i in idx
        )
        stray = np.flatnonzero(act_nan & ~exp_nan)
        if nan_is_oob_read and stray.size:
            where = ", ".join(index_str(int(i), shape) for i in stray[:SHOW])
            failures.append(
                Failure(
                    case.name,
                    "out-of-bounds-read",
                    pre + t("grader.nan_read", count=stray.size, shown=where),
                    t("grader.nan_read_cause"),
                    stray_line(result, "load"),
                )
            )
            return ~exp_nan & ~exp_inf
        failures.append(
            Failure(
                case.name,
                "nan-mismatch",
                pre + t("grader.nan_mismatch", nan=bad_nan.size, inf=bad_inf.size, shown=shown),
                cause_hint or t("grader.nan_cause"),
            )
        )
    return ~exp_nan & ~exp_inf


def unwritten_cause(unwritten: np.ndarray, n: int, block: int | None, result: dict) -> tuple[str, bool]:
    """Why elements were never written, and whether the host's grid is the evidence (then `where` is the line
    that computed the grid)."""
    first = int(unwritten[0])
    contiguous_tail = unwritten.size == n - first
    launches = result.get("launches", [])
    grid = list(launches[0]["grid"]) if launches else []
    programs = grid_size(grid)
    shown = "×".join(str(g) for g in grid) if len(grid) > 1 else str(programs)
    if block and contiguous_tail and first == (n // block) * block and first % block == 0:
        if programs and programs * block < n:
            return t("grader.grid_one_short", first=first, programs=shown or "?", block=block), True
    if block and contiguous_tail and programs > 1 and first == programs - 1 + block:
        return t("grader.overlap", first=first, block=block), False
    if block and contiguous_tail and first == block and n > block:
        return t("grader.first_block"), False
    if block and contiguous_tail and launches and programs * block <= first:
        return t("grader.grid_too_few", first=first, programs=shown, block=block, n=n), True
    if unwritten.size == n:
        return t("grader.none_written"), False
    return t("grader.some_unwritten"), False


def unwritten_cause_2d(unwritten: np.ndarray, shape: tuple[int, ...]) -> tuple[str, bool]:
    """Name the rows or columns a 2-D kernel never stored, in grid terms."""
    rows, cols = shape[0], int(np.prod(shape[1:]))
    mask = np.zeros(rows * cols, dtype=bool)
    mask[unwritten] = True
    grid = mask.reshape(rows, cols)
    full_rows, full_cols = grid.all(axis=1), grid.all(axis=0)
    r0 = next((r for r in range(rows) if full_rows[r:].all()), rows)
    c0 = next((c for c in range(cols) if full_cols[c:].all()), cols)
    tail = np.zeros_like(grid)
    tail[r0:, :] = True
    tail[:, c0:] = True
    if unwritten.size == rows * cols:
        return t("grader.none_written"), False
    if np.array_equal(tail, grid):
        if r0 < rows and c0 < cols:
            parts = t("grader.rows_and_columns_from", row=r0, column=c0)
        elif r0 < rows:
            parts = t("grader.rows_from", first=r0)
        else:
            parts = t("grader.columns_from", first=c0)
        return t("grader.rows_cols", parts=parts), True
    return t("grader.some_tiles"), False
