"""debug-persistent (lesson 10, outcome 10.3): `persistent_matmul(a, b, num_programs)` returns `a[M, K] @ b[K, N]`
(fp32/fp16 inputs, bf16 on a GPU, any strides, fp32 accumulation, a new contiguous output in a's dtype),
computed by ONE launch of AT MOST `num_programs` programs: a persistent kernel, whose programs each loop over
several output tiles. The starter is such a kernel with planted bugs that only show when a program gets more
than one tile, when the grid of tiles is not square, and when fewer programs run than the code assumed.

The cases give `num_programs` explicitly (fewer than the tiles, unevenly; more than the tiles; one), so a
learner's kernel is judged on exactly the situations the ladder's persistent rung brings. Values are judged like
`matmul` (contracts/_matmul.py: the float64 product and its fp32-accumulation bound) and replayed like every
contract; a launch with more programs than `num_programs` fails, whatever its values.

The diagnosis models the usual persistent mistakes with the launch's own BLOCK_M and BLOCK_N (when the kernel
names them so): tiles never written because the tile loop steps by a constant larger than the grid, tiles never
written because the tile index is split with the wrong tile count, and an accumulator carried from one tile to
the next.

Cost model: 2·M·N·K FLOPs; reads (M·K + K·N)·s bytes at least, writes M·N·s.
"""

from __future__ import annotations

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import UNIT_ROUNDOFF, Case, Tensor, cached, random_values, unsigned_bits
from tritonlab.grading.contracts import _matmul as mm
from tritonlab.grading.contracts.compare import add_hint, grid_size, judge
from tritonlab.grading.patterns import POISON
from tritonlab.models import Failure

FUNCTION = "persistent_matmul"
ARG_NAMES = ["a", "b", "num_programs"]

# (M, N, K, a layout, b layout, dtype, num_programs, label)
Plan = tuple[int, int, int, str, str, str, int, str]
PLAN: list[Plan] = [
    (1, 1, 1, "contiguous", "contiguous", "float32", 4, ""),
    (32, 32, 16, "contiguous", "contiguous", "float32", 4, "as many programs as tiles: "),
    (50, 40, 20, "contiguous", "contiguous", "float32", 3, "more tiles than programs: "),
    (33, 60, 16, "contiguous", "contiguous", "float32", 4, "a tile grid that is not square: "),
    (70, 20, 16, "contiguous", "contiguous", "float32", 2, "a tile grid that is not square: "),
    (20, 20, 37, "contiguous", "contiguous", "float32", 64, "more programs than tiles: "),
    (40, 40, 20, "contiguous", "contiguous", "float32", 1, "one program: "),
    (40, 36, 40, "contiguous", "contiguous", "float16", 5, "fp16, fp32 accumulation: "),
    (36, 28, 20, "transposed", "strided", "float32", 3, "a transposed, b strided: "),
    (40, 40, 50, "contiguous", "contiguous", "bfloat16", 3, ""),
]
GPU_PLAN: list[Plan] = [
    (1000, 1000, 1000, "contiguous", "contiguous", "float16", 132, "gpu large: "),
    (2049, 515, 1023, "contiguous", "transposed", "float16", 132, "gpu large: "),
    (1536, 1024, 512, "contiguous", "contiguous", "bfloat16", 7, "gpu large, few programs: "),
]


def _case(rng: np.random.Generator, plan: Plan, backend: str) -> Case:
    m, n, k, la, lb, dtype, programs, label = plan
    a = Tensor(random_values(rng, (m, k), dtype), dtype, la)
    b = Tensor(random_values(rng, (k, n), dtype), dtype, lb)
    name = f"{label}M={m} N={n} K={k} {dtype}, num_programs={programs}"
    return Case(name, (a, b, programs), extra=mm.extra_for(dtype) | {"backend": backend})


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    plan = list(PLAN)
    m, n = int(rng.integers(20, 60)), int(rng.integers(20, 60))
    plan.append((m, n, int(rng.integers(5, 40)), "contiguous", "contiguous", "float32", int(rng.integers(2, 6)),
                 "random: "))  # fmt: skip
    if backend == "gpu":
        plan += GPU_PLAN
    return [_case(rng, p, backend) for p in plan]


def prepare(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """The float64 product and its error bound, once per case."""
    a, b, _ = case.args
    expected = cached(case, "expected", lambda: a.values @ b.values)
    backend = case.extra.get("backend", "interpreter")
    return expected, cached(case, f"bound-{backend}", lambda: mm.dot_bound(a, b, backend))


# ---- the diagnosis: the persistent loop's usual mistakes, replayed in numpy ------------------------------------


def tile_shape(result: dict) -> tuple[int, int] | None:
    """BLOCK_M and BLOCK_N of the learner's launch, when the kernel calls them so."""
    for launch in result.get("launches", []):
        c = launch.get("constexprs") or {}
        bm, bn = c.get("BLOCK_M"), c.get("BLOCK_N")
        if isinstance(bm, int) and isinstance(bn, int) and 0 < bm <= 4096 and 0 < bn <= 4096:
            return bm, bn
    return None


def programs_launched(result: dict) -> int:
    launches = result.get("launches", [])
    return grid_size(list(launches[0].get("grid", []))) if launches else 0


def tiles_written(m: int, n: int, bm: int, bn: int, order: list[tuple[int, int]]) -> np.ndarray:
    """Which output elements a kernel writes when it stores the tiles at `order` (masked at M and N)."""
    written = np.zeros((m, n), dtype=bool)
    for pm, pn in order:
        written[pm * bm : (pm + 1) * bm, pn * bn : (pn + 1) * bn] = True
    return written


def unwritten_diagnosis(case: Case, result: dict) -> str:
    """Why some tiles were never stored, when one persistent mistake explains exactly which."""
    a, b, _ = case.args
    m, n = a.values.shape[0], b.values.shape[1]
    shape, grid = tile_shape(result), programs_launched(result)
    outputs = result.get("outputs", [])
    if shape is None or not grid or not outputs or tuple(outputs[0].get("shape", ())) != (m, n):
        return ""
    raw = np.asarray(result["arrays"][0])
    poison = POISON.get(a.dtype)
    if poison is None:
        return ""
    unwritten = (unsigned_bits(raw, a.dtype).reshape(m, n) == poison) if outputs[0].get("guarded") else None
    if unwritten is None or not unwritten.any():
        return ""
    bm, bn = shape
    tm, tn = -(-m // bm), -(-n // bn)
    tiles = tm * tn
    first_only = tiles_written(m, n, bm, bn, [(t // tn, t % tn) for t in range(min(grid, tiles))])
    if np.array_equal(~unwritten, first_only):
        return i18n.t("grader.debug_persistent_only_first_grid_tile", grid=grid, tiles=tiles)
    swapped = [(t // tm, t % tm) for t in range(tiles)]
    if np.array_equal(~unwritten, tiles_written(m, n, bm, bn, swapped)):
        return i18n.t("grader.debug_persistent_tiles_written_those_tile", tm=tm, tn=tn)
    return ""


def carried_accumulator(a: np.ndarray, b: np.ndarray, bm: int, bn: int, grid: int) -> np.ndarray:
    """The output when each program keeps one accumulator for all its tiles (row-major, step = grid)."""
    m, n = a.shape[0], b.shape[1]
    tm, tn = -(-m // bm), -(-n // bn)
    full = np.zeros((tm * bm, tn * bn))
    full[:m, :n] = a @ b
    out = np.zeros_like(full)
    for p in range(grid):
        acc = np.zeros((bm, bn))
        for t in range(p, tm * tn, grid):
            r, c = (t // tn) * bm, (t % tn) * bn
            acc = acc + full[r : r + bm, c : c + bn]
            out[r : r + bm, c : c + bn] = acc
    return out[:m, :n]


def value_diagnosis(case: Case, result: dict, bound: np.ndarray) -> str:
    a, b, _ = case.args
    actual = mm.actual(result, a.dtype)
    shape, grid = tile_shape(result), programs_launched(result)
    if actual is None or shape is None or not grid or actual.shape != (a.values.shape[0], b.values.shape[1]):
        return ""
    bm, bn = shape
    candidate = carried_accumulator(a.values, b.values, bm, bn, grid)
    tiles = -(-a.values.shape[0] // bm) * -(-b.values.shape[1] // bn)
    per_program = -(-tiles // grid)  # the most tiles one accumulator can have summed
    with np.errstate(invalid="ignore"):
        close = (
            np.abs(actual - candidate)
            <= 4 * UNIT_ROUNDOFF[a.dtype] * np.abs(candidate) + 4 * per_program * bound
        )
    if np.all(close):
        return i18n.t("grader.debug_persistent_each_tile_after_program")
    return ""


def check(case: Case, result: dict) -> list[Failure]:
    a, b, programs = case.args
    expected, bound = prepare(case)
    rtol = 2 * UNIT_ROUNDOFF[a.dtype]
    failures = judge(case, result, expected, a.dtype, rtol, bound, max_launches=1, nan_is_oob_read=True)
    failures = add_hint(
        failures,
        lambda: (
            value_diagnosis(case, result, bound)
            or mm.k_mask_hint(mm.actual(result, a.dtype), a.values.shape[1])
            or mm.accumulator_hint(a, b, mm.actual(result, a.dtype), expected)
        ),
    )
    if any(f.kind == "unwritten-output" for f in failures):
        cause = unwritten_diagnosis(case, result)
        if cause:
            failures = [
                Failure(f.case, f.kind, f.message, cause, f.where) if f.kind == "unwritten-output" else f
                for f in failures
            ]
    for launch in result.get("launches", []):
        started = grid_size(list(launch.get("grid", [])))
        if started > programs:
            failures.append(
                Failure(
                    case.name,
                    "wrong-result",
                    i18n.t(
                        "grader.debug_persistent_launch_kernel_started_started",
                        kernel=launch.get("kernel", "your kernel"),
                        started=started,
                        programs=programs,
                    ),
                    i18n.t("grader.debug_persistent_persistent_kernel_launches_fixed"),
                    str(launch.get("grid_where", "")),
                )
            )
    return failures
