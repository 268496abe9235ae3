"""One output's values judged in the parent (`compare_values`): shape, dtype and device, then unwritten elements
(the poison still there), values read from an input's guard, NaN/Inf, and the tolerance; with diagnostics in
Triton's terms (which program and lane, which kernel line, which grid axis was too small). A helper of
compare.py, whose `judge` calls it and which re-exports it to the contracts."""

from __future__ import annotations

import numpy as np

from tritonlab.grading.contracts import Case, decode, unsigned_bits
from tritonlab.grading.patterns import INPUT_GUARD, POISON
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


OOB_READ_CAUSE = (
    "a load read past the input (missing mask, or offsets that ignore the strides); masked loads return `other` "
    "instead"
)


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
                f"{fn} returned {result.get('returned', 'nothing')}, expected a tensor",
                "return the output tensor",
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
                f"output shape {tuple(meta['shape'])}, expected {shape}",
                "allocate the output with the shape the contract asks for",
            )
        ]
    if meta["dtype"] != out_dtype:
        return [
            Failure(
                case.name,
                "wrong-dtype",
                f"output dtype {meta['dtype']}, expected {out_dtype}",
                "allocate the output with the input's dtype (torch.empty_like or dtype=x.dtype)",
            )
        ]
    if meta.get("device_type") and meta["device_type"] != result.get("device_type", meta["device_type"]):
        return [
            Failure(
                case.name,
                "wrong-result",
                f"output is on {meta['device_type']}, inputs on {result.get('device_type')}",
                "allocate the output on the inputs' device",
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
                f"{pre}{unwritten.size} of {flat_expected.size} output elements were never "
                f"written, first at {index_str(first, shape)}: {shown}",
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
                f"{pre}{oob.size} output element(s) hold a value read from outside the input: {shown}",
                OOB_READ_CAUSE,
                stray_line(result, "load"),
            )
        )
        return failures

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
                    f"{pre}{stray.size} output element(s) are NaN where the reference is finite "
                    f"({where}): every input sits in NaN-filled guard memory, so a load read "
                    "past an input's bounds",
                    "mask every tl.load whose offsets can run past the bounds (rows, columns and "
                    "the K dimension) and give it `other=0.0`",
                    stray_line(result, "load"),
                )
            )
            return failures
        failures.append(
            Failure(
                case.name,
                "nan-mismatch",
                f"{pre}{bad_nan.size} NaN and {bad_inf.size} Inf element(s) differ from the "
                f"reference: {shown}",
                cause_hint
                or "NaN/Inf where the reference is finite usually means an overflow "
                "or a load of masked-off lanes without a safe `other`",
            )
        )
        return failures

    finite = ~exp_nan & ~exp_inf
    err = np.abs(actual - flat_expected)
    rt = np.broadcast_to(np.asarray(rtol, dtype=np.float64), np.shape(expected)).reshape(-1)
    at = np.broadcast_to(np.asarray(atol, dtype=np.float64), np.shape(expected)).reshape(-1)
    bound = at + rt * np.abs(flat_expected)
    bad = np.flatnonzero(finite & ~(err <= bound))
    if bad.size:
        shown = "; ".join(
            f"{index_str(int(i), shape)}{owner(int(i), block if len(shape) == 1 else None)}: "
            f"expected {fmt(flat_expected[i])}, got {fmt(actual[i])}"
            for i in bad[:SHOW]
        )
        k = int(bad[np.argmax(err[bad] / np.maximum(bound[bad], 1e-300))])
        relative = f", relative {err[k] / abs(flat_expected[k]):.2g}" if flat_expected[k] else ""
        worst = f"worst at {index_str(k, shape)}: error {err[k]:.3g}{relative}, allowed {bound[k]:.2g}"
        failures.append(
            Failure(
                case.name,
                "wrong-result",
                f"{pre}{bad.size} of {flat_expected.size} elements differ ({worst}): {shown}",
                cause_hint,
            )
        )
    return failures


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
            return (
                f"elements ≥ {first} were never written: the grid has {shown or '?'} program(s), "
                f"one too few — size it with `triton.cdiv(n, {block})`, not `n // {block}`",
                True,
            )
    if block and contiguous_tail and programs > 1 and first == programs - 1 + block:
        return (
            f"only elements < {first} were written: the programs' blocks overlap, each starting at its "
            f"program id — multiply it by the block size: `pid * {block} + tl.arange(0, {block})`",
            False,
        )
    if block and contiguous_tail and first == block and n > block:
        return (
            "only the first block was written: every program used the same offsets — "
            "add the program's start, `pid * BLOCK_SIZE`, to `tl.arange(0, BLOCK_SIZE)`",
            False,
        )
    if block and contiguous_tail and launches and programs * block <= first:
        return (
            f"elements ≥ {first} were never written: the grid has {shown} program(s) of {block} lanes, too few "
            f"for {n} elements — size it with `triton.cdiv(n, {block})`",
            True,
        )
    if unwritten.size == n:
        return (
            "no element was written: does the kernel store its result (tl.store) into the output pointer?",
            False,
        )
    return (
        "some elements were never stored: check the grid size and that the store's mask matches the bounds",
        False,
    )


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
        return (
            "no element was written: does the kernel store its result (tl.store) into the output pointer?",
            False,
        )
    if np.array_equal(tail, grid):
        parts = []
        if r0 < rows:
            parts.append(f"rows ≥ {r0}")
        if c0 < cols:
            parts.append(f"columns ≥ {c0}")
        return (
            f"{' and '.join(parts)} of the output were never written: the grid is too small along that "
            "axis — size each axis with `triton.cdiv(size, BLOCK)` (not `size // BLOCK`) and offset each "
            "program by `pid * BLOCK`",
            True,
        )
    return (
        "some tiles were never stored: check that the grid covers every row and column (cdiv), that each "
        "program adds its own start (`pid * BLOCK`) to its offsets, and that the store's mask is not stricter "
        "than the bounds",
        False,
    )
