"""Judging one case in the parent: the checks every contract shares, and diagnostics in Triton's terms."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tritonlab.grading.contracts import Case, Tensor, decode, describe_case, result_error, unsigned_bits
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


MASK_CAUSE = (
    "a store without a mask (or with `<=` instead of `<`) writes the lanes of the last program that fall past "
    "the end; store with `mask=offsets < n`"
)
OFFSETS_CAUSE = (
    "the store's offsets point outside the tensor, not just past its end: check the offset arithmetic — "
    "`row * stride0 + col * stride1` with the OUTPUT's own strides, and the program's starting offset"
)


def just_past_end(v: dict, result: dict) -> bool:
    """Evidence for a missing (or `<=`) mask: the stray writes start at the very first element past the end
    and run on without a gap, within one program's lanes. Wrong strides scatter their writes instead."""
    after = v.get("after") or []
    if not after or v.get("before") or after[0] != v["numel"]:
        return False
    if any(b - a != 1 for a, b in zip(after, after[1:], strict=False)):
        return False
    reach = max(block_size(result) or 0, 1024)  # the lanes of one last program
    return after[-1] < v["numel"] + reach


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
DISCARDED_READ_CAUSE = (
    "give the load the bounds the store has: `tl.load(ptr + offsets, mask=offsets < n)`, with `other=` when the "
    "masked lanes take part in a sum, a max or a dot"
)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def reads_outside(case: Case, result: dict, *, reached: bool = False) -> list[Failure]:
    """Loads that read lanes off an allocation (its guards, or past a host copy: `outside` in the access log,
    grading/where.py), one failure per load line and tensor. The log is kept on the interpreter only.

    `reached=False` (the case passed otherwise): a masked store threw the values away, but the read is still
    out of bounds — on a GPU it can end in an illegal memory access. `reached=True` (the launches alone gave
    another result in the replay): memory past a host copy is not the grader's, so the replay's process
    holds other bytes there; the read, not the host, is why the results differ."""
    failures = []
    for s in result.get("strays", []):
        if not isinstance(s, dict) or s.get("op") != "load":
            continue
        count, first, size = _count(s.get("outside")), _count(s.get("first_outside")), _count(s.get("size"))
        if not count or first is None or size is None:
            continue
        label = str(s.get("tensor"))[:80]
        head = f"a load read {count} lane(s) outside {label} (indices 0 to {size - 1}), the first at index {first}"
        tail = (
            "memory the tensor does not own, whose contents differ from one run to the next"
            if reached
            else "none of those values reached the output, yet the read itself is out of bounds"
        )
        failures.append(
            Failure(
                case.name,
                "out-of-bounds-read",
                f"{head}; {tail}",
                OOB_READ_CAUSE if reached else DISCARDED_READ_CAUSE,
                str(s.get("where") or ""),
            )
        )
    return failures


def host_line(result: dict) -> str:
    """The learner's host line that ran the first flagged torch op, else the first host copy of an input."""
    where = result.get("op_where", {})
    for op in result.get("torch_ops", []):
        name = op.split(":", 1)[-1]
        if where.get(name):
            return str(where[name])
    return next((str(c["where"]) for c in result.get("host_copies", []) if c.get("where")), "")


def grid_size(grid: list) -> int:
    """Programs a launch started: the product of every grid axis (a grid of (1, n) starts n of them)."""
    return int(np.prod(grid)) if grid else 0


def host_checks(
    case: Case, result: dict, *, allow_copies: bool, needs_launch: bool, max_launches: int | None = None
) -> list[Failure]:
    """Checks on what the host code did: launches, torch fallbacks, guards, inputs."""
    failures: list[Failure] = []
    fn = result.get("function", "your function")
    for v in result.get("guard_violations", []):
        where = []
        if v["after"]:
            where.append(f"{len(v['after'])}+ element(s) past the end, first at index {v['after'][0]}")
        if v["before"]:
            where.append(f"element(s) before the start, nearest at index {v['before'][-1]}")
        label = v["label"]
        size = v["numel"]
        failures.append(
            Failure(
                case.name,
                "out-of-bounds-write",
                f"the kernel wrote outside {label} ({size} elements): {'; '.join(where)}",
                MASK_CAUSE if just_past_end(v, result) else OFFSETS_CAUSE,
                stray_line(result, "store", label),
            )
        )
    for label in result.get("inputs_modified", []):
        failures.append(
            Failure(
                case.name,
                "input-modified",
                f"{label} was changed by {fn}",
                "write results into a new tensor (torch.empty_like), never into an input",
            )
        )
    ops = result.get("torch_ops", [])
    compute = sorted({o.split(":", 1)[1] for o in ops if o.startswith("compute:")})
    copies = sorted({o.split(":", 1)[1] for o in ops if o.startswith("copy:")})
    if compute or (copies and not allow_copies):
        shown = compute + ([] if allow_copies else copies)
        names = ", ".join(shown)
        where = result.get("op_where", {})
        failures.append(
            Failure(
                case.name,
                "torch-fallback",
                f"{fn} ran torch operations on tensors ({names})",
                "the result must come from your Triton kernel; on the host, only allocate "
                "outputs and pass pointers, sizes and strides",
                next((where[n] for n in shown if where.get(n)), "") or host_line(result),
            )
        )
    launches = result.get("launches", [])
    if needs_launch and not launches and result.get("status") == "returned":
        failures.append(
            Failure(
                case.name,
                "no-kernel-launch",
                f"{fn} returned without launching a Triton kernel",
                "launch your @triton.jit kernel with `kernel[grid](...)`",
                host_line(result),
            )
        )
    if max_launches is not None and len(launches) > max_launches:
        names = ", ".join(launch["kernel"] for launch in launches)
        failures.append(
            Failure(
                case.name,
                "too-many-launches",
                f"{len(launches)} kernel launches ({names}); this exercise allows {max_launches}",
                "fuse the steps into one kernel: do them on the tile while it is in registers",
            )
        )
    return failures


def exception_failure(case: Case, result: dict) -> Failure | None:
    error = result_error(result)
    if error is None:
        return None
    if case.expect_error and error["type"] == case.expect_error:
        return None
    message = f"{error['type']}: {error['message']}"
    if case.expect_error:
        return Failure(
            case.name,
            "missing-validation",
            f"expected {case.expect_error} for ({describe_case(case)}), got {message}",
            f"check the inputs on the host and `raise {case.expect_error}(...)` with a clear message",
            error.get("where", ""),
        )
    return Failure(case.name, "exception", message, error.get("hint", ""), error.get("where", ""))


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


HINTED = ("wrong-result", "nan-mismatch", "out-of-bounds-read")


def add_hint(failures: list[Failure], hint: Callable[[], str]) -> list[Failure]:
    """Attach a contract's specific diagnosis (computed only when values are wrong) to the value failures."""
    if not any(f.kind in HINTED for f in failures):
        return failures
    try:
        text = hint()
    except Exception:  # noqa: BLE001 - a diagnosis is best effort: never let it hide the verdict
        text = ""
    if not text:
        return failures
    return [Failure(f.case, f.kind, f.message, text, f.where) if f.kind in HINTED else f for f in failures]


def judge(
    case: Case,
    result: dict,
    expected: np.ndarray,
    out_dtype: str,
    rtol: Tol,
    atol: Tol,
    *,
    allow_copies: bool = False,
    needs_launch: bool = True,
    max_launches: int | None = None,
    expected_shape: tuple[int, ...] | None = None,
    cause_hint: str = "",
    nan_is_oob_read: bool = False,
) -> list[Failure]:
    """The standard judgement for a case whose function returns one tensor."""
    exc = exception_failure(case, result)
    if exc is not None:
        return [exc]
    if case.expect_error:
        if result_error(result) is not None:
            return []  # raised what was expected
        return [
            Failure(
                case.name,
                "missing-validation",
                f"{result.get('function', 'your function')}({describe_case(case)}) returned instead of "
                f"raising {case.expect_error}",
                f'check the inputs on the host and `raise {case.expect_error}("...")` with a message '
                "that says what is wrong",
            )
        ]
    has_data = any(isinstance(a, Tensor) and a.values.size for a in case.args) or expected.size > 0
    failures = host_checks(
        case,
        result,
        allow_copies=allow_copies,
        needs_launch=needs_launch and has_data,
        max_launches=max_launches,
    )
    failures += compare_values(
        case,
        result,
        expected,
        out_dtype,
        rtol,
        atol,
        expected_shape=expected_shape,
        cause_hint=cause_hint,
        nan_is_oob_read=nan_is_oob_read,
    )
    return failures
