"""cumsum (lesson 13): `cumsum(x)` — the inclusive running sum of every row of a 2-D `x` (any strides,
fp32/fp16/bf16), y[r, c] = Σ_{c' ≤ c} x[r, c'], in a new contiguous tensor of x's dtype, summed in fp32.

Rows longer than one block are the point: a program scans its row block by block with tl.associative_scan and
carries the running total from one block to the next. On a GPU a case has rows of 2²¹ + 3 elements, past the
largest block Triton allows (2²⁰ elements), so only a carry passes it. On the interpreter the rows are at most a
few thousand elements: the interpreter runs a combine function of the learner's own one element at a time
(tens of µs each; `tl.cumsum`, the same scan with the built-in add, runs in NumPy), so the cases are kept
small, and they test the carry of every kernel whose block is shorter than the row.

Cost model: reads M·N elements, writes M·N → bytes = 2·M·N·element_size; about one add per element.
Tolerance: the output's rounding plus fp32 error ~u32·(2·log2 N + N/64 + 16) on every running sum, relative to
the running sum of |x| (a tree scan within a block, one add of the carry per block).
"""

from __future__ import annotations

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import TINY, UNIT_ROUNDOFF, Case, Tensor, cached, quantize, random_values
from tritonlab.grading.contracts._layout import actual_values, explain_layout
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "cumsum"
ARG_NAMES = ["x"]
U32 = UNIT_ROUNDOFF["float32"]
LONGEST_BLOCK = 1 << 20  # Triton's largest block (TRITON_MAX_TENSOR_NUMEL)


def _case(name: str, values: np.ndarray, dtype: str, layout: str = "contiguous") -> Case:
    dims = "×".join(str(d) for d in values.shape)
    extra = {"bf16_arithmetic": True} if dtype == "bfloat16" else {}
    where = "" if layout == "contiguous" else f", {layout}"
    return Case(
        f"{name}{dims} {dtype}{where}", (Tensor(quantize(values, dtype), dtype, layout),), extra=extra
    )


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    def rnd(shape: tuple[int, int]) -> np.ndarray:
        return random_values(rng, shape, "float64")

    out = [
        _case("one element: ", rnd((1, 1)), "float32"),
        _case("", rnd((2, 400)), "float32"),
        _case("long rows: ", rnd((1, 1500)), "float32"),
        _case("", rnd((5, 129)), "float16"),
        _case("many short rows: ", rnd((16, 20)), "float32"),
        _case("", rnd((int(rng.integers(2, 4)), int(rng.integers(150, 400)))), "float32"),
        _case("transposed: ", rnd((4, 200)), "float32", "transposed"),
        _case("row stride ≠ N: ", rnd((3, 300)), "float16", "padded"),
        _case("positive values (the sums grow): ", np.abs(rnd((1, 1000))) + 0.25, "float16"),
        _case("", rnd((4, 333)), "bfloat16"),
    ]
    if backend == "gpu":
        out += [
            _case("large: ", rnd((4, 100_000)), "float32"),
            _case("rows longer than any block: ", rnd((2, 2 * LONGEST_BLOCK + 3)), "float32"),
            _case("large: ", rnd((1024, 4096)), "bfloat16"),
        ]
    return out


def reference(x: np.ndarray) -> np.ndarray:
    return np.cumsum(x, axis=1)


def tolerance(x: np.ndarray, dtype: str) -> tuple[float, np.ndarray]:
    n = max(x.shape[1], 1)
    k = 2 * np.log2(n + 1) + n / 64 + 16
    return 2 * UNIT_ROUNDOFF[dtype], U32 * k * np.cumsum(np.abs(x), axis=1) + 4 * TINY[dtype]


def prepare(case: Case) -> tuple[np.ndarray, float, np.ndarray]:
    (x,) = case.args
    expected = cached(case, "expected", lambda: reference(x.values))
    rtol, atol = cached(case, "tolerance", lambda: tolerance(x.values, x.dtype))
    return expected, rtol, atol


def diagnosis(x: Tensor, result: dict, rtol: float, atol: np.ndarray) -> str:
    actual = actual_values(result, x.dtype)
    v = x.values
    if actual is None or actual.shape != v.shape:
        return ""
    expected = reference(v)

    def close(candidate: np.ndarray, loose: float = 0.0) -> bool:
        bound = 4 * atol + 4 * rtol * np.abs(candidate) + loose * np.cumsum(np.abs(v), axis=1)
        return bool(np.all(np.abs(actual - candidate) <= bound))

    exclusive = expected - v
    if close(exclusive):
        return i18n.t("grader.cumsum_this_exclusive_scan_y")
    n = v.shape[1]
    for block in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096):
        if block >= n:
            break
        restarted = np.concatenate(
            [np.cumsum(v[:, s : s + block], axis=1) for s in range(0, n, block)], axis=1
        )
        if close(restarted):
            return i18n.t("grader.cumsum_every_block_block_starts", block=block)
    if x.dtype == "float16" and close(expected, 2.0**-9):
        return i18n.t("grader.cumsum_right_up_fp16_rounding")
    wrong = np.abs(actual - expected) > 4 * atol + 4 * rtol * np.abs(expected)
    firsts = {int(np.argmax(row)) for row in wrong if row.any()}
    if len(firsts) == 1 and (first := firsts.pop()) >= 16 and first % 16 == 0:
        return i18n.t("grader.cumsum_every_row_right_up", first=first)
    return ""


def check(case: Case, result: dict) -> list[Failure]:
    (x,) = case.args
    expected, rtol, atol = prepare(case)
    failures = judge(case, result, expected, x.dtype, rtol, atol)

    def layout(generic: bool) -> str:
        return explain_layout(
            case, result, x.dtype, lambda v: reference(v[0]), rtol, atol, ARG_NAMES, generic=generic
        )

    return add_hint(failures, lambda: layout(False) or diagnosis(x, result, rtol, atol) or layout(True))
