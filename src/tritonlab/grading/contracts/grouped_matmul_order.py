"""grouped-matmul-order (lesson 9): `grouped_matmul(a, b, block_m, block_n, group_m)` returns `a @ b` (fp32 or
fp16 inputs, any strides, fp32 accumulation, a new contiguous tensor with the inputs' dtype), computed by a 1-D
grid of `cdiv(M, block_m) · cdiv(N, block_n)` programs, each writing one `block_m × block_n` tile of the output,
and program `pid` must write the tile that the GROUP_M order gives it:

    per_group = group_m · tiles_n;  first_m = (pid // per_group) · group_m
    rows_here = min(tiles_m − first_m, group_m);  local = pid % per_group
    pid_m = first_m + local % rows_here;  pid_n = local // rows_here

The order is graded from the program → tile map seen on the interpreter (contracts/_tiles.py: which output rows
and columns each program stored to). The check child records it in `run_case`; on the interpreter backend the
fresh replay child (grading/replay/, `TILE_MAP`) records it again without the learner's host code, and that
map is the one judged. On a GPU check the order cases run the learner's kernels through Triton's interpreter
(compiled programs record nothing per program), so the map comes from the check child only; the `gpu:` cases
run compiled and are judged on values. Values are judged like `matmul`, and replayed like every contract.

Cost model: 2·M·N·K FLOPs; reads (M·K + K·N)·s bytes at least, writes M·N·s.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import UNIT_ROUNDOFF, Case, Tensor, _tiles, cached, random_values
from tritonlab.grading.contracts import _matmul as mm
from tritonlab.grading.contracts.compare import exception_failure, judge
from tritonlab.models import Failure

FUNCTION = "grouped_matmul"
ARG_NAMES = ["a", "b", "block_m", "block_n", "group_m"]
TILE_MAP = True  # the replay child records the map too (grading/replay/)
MAX_PROGRAMS = _tiles.MAX_PROGRAMS

# (M, N, K, a layout, b layout, dtype, block_m, block_n, group_m, label)
PLAN = [
    (96, 80, 24, "contiguous", "contiguous", "float32", 16, 16, 2, "order: 6×5 tiles, GROUP_M=2"),
    (100, 48, 20, "contiguous", "contiguous", "float32", 16, 16, 4, "order: 7 tile rows, a short last group"),
    (70, 90, 33, "contiguous", "contiguous", "float32", 16, 32, 3, "order: 16×32 tiles, GROUP_M=3"),
    (48, 64, 16, "contiguous", "contiguous", "float32", 16, 16, 1, "order: GROUP_M=1 is row-major"),
    (40, 40, 17, "contiguous", "contiguous", "float32", 16, 16, 8, "order: GROUP_M above the tile rows"),
    (1, 1, 1, "contiguous", "contiguous", "float32", 16, 16, 4, "M=1 N=1 K=1"),
    (33, 20, 45, "strided", "padded", "float32", 16, 16, 2, "a strided, b padded"),
    (40, 24, 50, "transposed", "contiguous", "float32", 16, 16, 2, "a transposed"),
    (24, 40, 50, "contiguous", "transposed", "float16", 16, 16, 2, "b transposed"),
    (50, 30, 70, "contiguous", "contiguous", "float16", 16, 16, 3, "float16"),
]
GPU_PLAN = [
    (1000, 1000, 1000, "contiguous", "contiguous", "float16", 64, 64, 8, "gpu: large, compiled"),
    (4097, 1023, 515, "contiguous", "transposed", "float32", 64, 64, 8, "gpu: large, compiled"),
]


def tile_of(pid: int, tiles_m: int, tiles_n: int, group_m: int) -> tuple[int, int]:
    """The tile (pid_m, pid_n) program `pid` computes in GROUP_M order (group_m = 1: row-major)."""
    per_group = group_m * tiles_n
    first_m = (pid // per_group) * group_m
    rows_here = min(tiles_m - first_m, group_m)
    local = pid % per_group
    return first_m + local % rows_here, local // rows_here


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    plan = list(PLAN)
    # a fresh shape per check, so that no fixed list of maps can be special-cased
    m, n = int(rng.integers(50, 120)), int(rng.integers(40, 100))
    plan.append((m, n, int(rng.integers(5, 40)), "contiguous", "contiguous", "float32", 16, 16,
                 int(rng.integers(2, 5)), "order: random shape"))  # fmt: skip
    if backend == "gpu":
        plan += GPU_PLAN
    out = []
    for m, n, k, la, lb, dtype, bm, bn, g, label in plan:
        a = Tensor(random_values(rng, (m, k), dtype), dtype, la)
        b = Tensor(random_values(rng, (k, n), dtype), dtype, lb)
        name = f"{label}: M={m} N={n} K={k} {dtype}, {bm}×{bn} tiles, GROUP_M={g}"
        order = not label.startswith("gpu:")
        out.append(Case(name, (a, b, bm, bn, g), extra={"backend": backend, "order": order}))
    return out


_MISSING = object()


# ---- child side: the program → tile map -----------------------------------------------------------------


@contextmanager
def interpreted(module_globals: dict, device: str) -> Iterator[None]:
    """On a GPU check: run the learner's compiled `@triton.jit` kernels through Triton's interpreter inside the
    block (module globals swapped for interpreted twins; a kernel's calls to other jit functions, the learner's or
    triton.language's own such as `tl.zeros`, interpreted too). On the interpreter backend they already are."""
    if device == "cpu":
        yield
        return
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    twins: dict[int, Any] = {}

    def twin(fn: Any) -> Any:
        return twins.setdefault(id(fn), InterpretedFunction(fn.fn))

    swapped = {name: v for name, v in module_globals.items() if isinstance(v, JITFunction)}
    original_call = JITFunction.__dict__["__call__"]
    saved = _language_state()
    for name, value in swapped.items():
        module_globals[name] = twin(value)
    JITFunction.__call__ = lambda self, *a, **kw: twin(self)(*a, **kw)  # type: ignore[method-assign]
    try:
        yield
    finally:
        JITFunction.__call__ = original_call  # type: ignore[method-assign]
        module_globals.update(swapped)
        _restore_language(saved)


def _language_state() -> list[tuple[Any, dict]]:
    """The attributes of triton.language's modules and classes: the interpreter patches some of them (dtype's
    `to_ir`, builtins) while it runs a kernel, and a nested interpreted call (a jit function of triton.language
    itself) can leave them patched, which breaks every later GPU compile in this process."""
    import sys

    owners: list[Any] = [
        m for name, m in list(sys.modules.items()) if name.startswith("triton.language") and m
    ]
    for module in list(owners):
        owners += [
            v for v in vars(module).values() if isinstance(v, type) and v.__module__.startswith("triton.")
        ]
    unique = {id(o): o for o in owners}
    return [(o, dict(vars(o))) for o in unique.values()]


def _restore_language(saved: list[tuple[Any, dict]]) -> None:
    """Put back what the interpreter patched, except the interpreter's own globals that its rewriter added to a
    module's namespace (`interpreter_semantic`, ...): a rewritten library function (`tl.swizzle2d`, whose
    assignments become `interpreter_semantic.to_tensor(...)`) is cached for the whole process
    (`InterpretedFunction.rewritten_fn`) and looks them up there on its next call, in the next case."""
    from triton.runtime import interpreter

    own = vars(interpreter)
    for owner, before in saved:
        now = dict(vars(owner))
        added = now.keys() - before.keys()
        if isinstance(owner, types.ModuleType):
            added = {name for name in added if own.get(name, _MISSING) is not now[name]}
        for name in added:
            try:
                delattr(owner, name)
            except (AttributeError, TypeError):
                pass
        for name, value in before.items():
            if now.get(name) is not value:
                try:
                    setattr(owner, name, value)
                except (AttributeError, TypeError):
                    pass


def interpreted_on_gpu(case: Case) -> bool:
    """On a GPU check, the order cases ran the kernels through the interpreter in the check child (run_case),
    while the replay compiles them: the grader compares the two results within rounding (found on the H200,
    where a bit-for-bit comparison called the course solution host-computed)."""
    return bool(case.extra.get("order"))


def run_case(fn: Any, case_spec: dict, tools: Any) -> Any:
    args = [tools.build_arg(a) for a in case_spec["args"]]
    if not case_spec.get("extra", {}).get("order"):
        return fn(*args)
    with _tiles.recording() as tap, interpreted(getattr(fn, "__globals__", {}), tools.device):
        value = fn(*args)
    tiles = _tiles.tiles_of(tap, value)
    if tiles is None:
        return value  # judged as a wrong shape / return type
    return {"json": {"tiles": tiles}, "tensors": [value]}


# ---- parent side --------------------------------------------------------------------------------------


def _ints(row: Any) -> list[int] | None:
    ok = isinstance(row, list) and len(row) == 11 and all(type(v) is int for v in row)
    return row if ok else None


def order_failures(case: Case, result: dict) -> list[Failure]:
    """Compare the recorded program → tile map with the GROUP_M order."""
    a, b, bm, bn, g = case.args
    m, n = a.values.shape[0], b.values.shape[1]
    tiles_m, tiles_n = -(-m // bm), -(-n // bn)
    total = tiles_m * tiles_n
    data = result.get("data")
    raw = data.get("tiles") if isinstance(data, dict) else None
    if not isinstance(raw, list) or len(raw) > MAX_PROGRAMS:
        return [Failure(case.name, "wrong-result", i18n.t("grader.grouped_matmul_order_no_program_tile_map"))]
    rows = [r for r in (_ints(x) for x in raw) if r is not None]
    if len(rows) != len(raw):
        return [
            Failure(case.name, "wrong-result", i18n.t("grader.grouped_matmul_order_program_tile_map_this"))
        ]
    rows = [r for r in rows if r[6] >= 0]  # programs that wrote part of the output
    grids = {tuple(r[3:6]) for r in rows}
    if grids and grids != {(total, 1, 1)}:
        shown = " and ".join("×".join(str(d) for d in grid) for grid in sorted(grids))
        return [
            Failure(
                case.name,
                "wrong-result",
                i18n.t(
                    "grader.grouped_matmul_order_output_was_written_by",
                    shown=shown,
                    tiles_m=tiles_m,
                    tiles_n=tiles_n,
                    total=total,
                ),
                i18n.t("grader.grouped_matmul_order_launch_grid_triton_cdiv"),
            )
        ]
    seen: dict[int, tuple[int, int]] = {}
    for r in rows:
        pid, (r0, r1, c0, c1) = r[0], r[6:10]
        tile = (r0 // bm, c0 // bn)
        if r1 // bm != tile[0] or c1 // bn != tile[1] or pid in seen:
            return [
                Failure(
                    case.name,
                    "wrong-result",
                    i18n.t(
                        "grader.grouped_matmul_order_program_pid_wrote_rows",
                        pid=pid,
                        r0=r0,
                        r1=r1,
                        c0=c0,
                        c1=c1,
                        bm=bm,
                        bn=bn,
                    ),
                    i18n.t("grader.grouped_matmul_order_each_program_writes_exactly"),
                )
            ]
        seen[pid] = tile
    expected = {p: tile_of(p, tiles_m, tiles_n, g) for p in range(total)}
    wrong = [p for p in sorted(seen) if seen[p] != expected[p]]
    if not wrong:
        return []
    row_major = all(seen[p] == (p // tiles_n, p % tiles_n) for p in seen)
    first = wrong[0]
    shown = ", ".join(f"{p} → {seen[p]}" for p in wrong[:4])
    wants = ", ".join(f"{p} → {expected[p]}" for p in wrong[:4])
    if row_major:
        message = i18n.t(
            "grader.grouped_matmul_order_programs_take_tiles_row",
            first=first,
            seen=seen[first],
            g=g,
            tiles_m=tiles_m,
            tiles_n=tiles_n,
            expected=expected[first],
            min=min(g, tiles_m),
        )
    else:
        message = i18n.t(
            "grader.grouped_matmul_order_n_wrong_total_programs",
            n_wrong=len(wrong),
            total=total,
            g=g,
            shown=shown,
            wants=wants,
        )
    return [
        Failure(
            case.name,
            "wrong-result",
            message,
            i18n.t("grader.grouped_matmul_order_groups_group_m_tile"),
        )
    ]


def check(case: Case, result: dict) -> list[Failure]:
    a, b, *_ = case.args
    exc = exception_failure(case, result)
    if exc is not None:
        return [exc]
    expected = cached(case, "expected", lambda: a.values @ b.values)
    backend = case.extra.get("backend", "interpreter")
    bound = cached(case, f"bound-{backend}", lambda: mm.dot_bound(a, b, backend))
    failures = judge(case, result, expected, a.dtype, 2 * UNIT_ROUNDOFF[a.dtype], bound, nan_is_oob_read=True)
    if case.extra.get("order") and result.get("status") == "returned":
        failures += order_failures(case, result)
    return failures
