"""softmax (lesson 8): `softmax(x)` — row-wise softmax over the last dim of a 2-D `x`; output dtype = input
dtype. Right for magnitudes like ±1e4 (subtract the row max; rows of large negative and of large positive
magnitude in every dtype), for -inf entries (a fully -inf row gives NaN,
as in torch), and for any row length (rows longer than one block, too).

Cost model: reads M·N elements, writes M·N → bytes = 2·M·N·element_size; ~5 FLOPs per element.
Tolerance: the output's own rounding, plus fp32 arithmetic error — the exponent's argument (x − max) carries
an absolute error ~u·|x − max|, the row sum a relative error ~u·(log2 N + N/64) (tree or chunked sums).
"""

from __future__ import annotations

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import TINY, UNIT_ROUNDOFF, Case, Tensor, cached, quantize, random_values
from tritonlab.grading.contracts._layout import actual_values, explain_layout
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "softmax"
ARG_NAMES = ["x"]
U32 = UNIT_ROUNDOFF["float32"]


def _case(name: str, values: np.ndarray, dtype: str, layout: str = "contiguous") -> Case:
    dims = "×".join(str(d) for d in values.shape)
    extra = {"bf16_arithmetic": True} if dtype == "bfloat16" else {}
    where = "" if layout == "contiguous" else f" {layout}"
    return Case(
        f"{name}{dims} {dtype}{where}", (Tensor(quantize(values, dtype), dtype, layout),), extra=extra
    )


def neg_inf_rows(rng: np.random.Generator, cols: int) -> np.ndarray:
    """Rows with -inf entries: scattered; all -inf (torch gives NaN); one finite at the end / at the start;
    a long -inf prefix (an online softmax must not compute exp(-inf - -inf))."""
    x = random_values(rng, (5, cols), "float32", 2.0)
    x[0, rng.random(cols) < 0.2] = -np.inf
    x[1, :] = -np.inf
    x[2, :-1] = -np.inf
    x[3, : int(cols * 0.75)] = -np.inf
    x[4, 1:] = -np.inf
    return x


def asymmetric_rows(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Rows whose values crowd at one end with a few far outliers at the other, the max at either end:
    a sum over the wrong entries, a wrong max or an off-by-one in the row changes the result visibly."""
    x = -6.0 * rng.random((rows, cols)) ** 4
    x[:, -1] = 4.0  # the max in the last column (a loop that stops one short misses it)
    x[::2, 0], x[::2, -1] = 5.0, -30.0  # ... or in the first
    return x


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    def rnd(shape: tuple[int, int], scale: float = 1.0) -> np.ndarray:
        return random_values(rng, shape, "float64", scale)

    big = 1e4 * (2 * rng.random((5, 513)) - 1)
    big16 = 1e4 * (2 * rng.random((4, 300)) - 1)
    out = [
        _case("", rnd((1, 1)), "float32"),
        _case("", rnd((3, 7), 3.0), "float32"),
        _case("", rnd((4, 127), 3.0), "float32"),
        _case("", rnd((4, 128), 3.0), "float32"),
        _case("", rnd((4, 129), 3.0), "float32"),
        _case("", rnd((17, 1000), 3.0), "float32"),
        _case("", rnd((3, 1025), 3.0), "float32"),
        _case("long rows ", rnd((2, 5000), 3.0), "float32"),
        _case("many rows ", rnd((33, 33), 3.0), "float32"),  # > 32 programs; each costs ~10 ms interpreted
        _case("", rnd((int(rng.integers(5, 20)), int(rng.integers(200, 900))), 3.0), "float32"),
        _case("row stride ≠ N: ", rnd((9, 300), 3.0), "float32", "padded"),
        _case("storage offset: ", rnd((5, 77), 3.0), "float32", "offset"),
        _case("±1e4 magnitudes ", big, "float32"),
        _case("±1e4 magnitudes ", big16, "float16"),
        _case("-inf entries, a fully -inf row ", neg_inf_rows(rng, 2000), "float32"),
        _case("transposed (column stride ≠ 1): ", rnd((12, 70), 3.0), "float32", "transposed"),
        _case("column stride 2: ", rnd((6, 129), 3.0), "float32", "strided"),
        _case("all-negative rows ", -1.0 - 40.0 * rng.random((6, 300)), "float32"),
        _case("asymmetric spread ", asymmetric_rows(rng, 6, 257), "float32"),
        _case("", rnd((11, 777), 3.0), "float16"),
        _case("", rnd((11, 777), 3.0), "bfloat16"),
    ]
    # rows far below zero and far above it, in every dtype, with masked lanes (N not a power of two): a max
    # that counts masked lanes as 0 gives exp(x - 0) = 0 for every entry of a far-negative row (0 / 0 = NaN)
    for dtype in ("float32", "float16", "bfloat16"):
        for sign, name in ((-1.0, "large negative rows "), (1.0, "large positive rows ")):
            out.append(_case(name, sign * (1e4 + 30.0 * rng.random((3, 100))), dtype))
    if backend == "gpu":
        out += [
            _case("", rnd((1823, 4097), 3.0), "float32"),
            _case("", rnd((64, 65539), 3.0), "float16"),
            _case("-inf entries ", neg_inf_rows(rng, 40000), "float32"),
        ]
    return out


def reference(x: np.ndarray, pad: int = 0) -> np.ndarray:
    """Row softmax in float64; `pad` extra zero entries per row model `other=0` on the masked lanes."""
    xp = np.concatenate([x, np.zeros((x.shape[0], pad))], axis=1) if pad else x
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        m = np.max(xp, axis=1, keepdims=True) if xp.shape[1] else np.zeros((xp.shape[0], 1))
        e = np.exp(xp - m)
        y = e / e.sum(axis=1, keepdims=True)
    return y[:, : x.shape[1]]


def tolerance(x: np.ndarray, dtype: str) -> tuple[np.ndarray, float]:
    n = max(x.shape[1], 1)
    with np.errstate(invalid="ignore"):
        spread = np.abs(x - np.max(x, axis=1, keepdims=True))
    spread = np.where(np.isfinite(spread), np.minimum(spread, 200.0), 0.0)
    rtol = 2 * UNIT_ROUNDOFF[dtype] + U32 * (64 + 4 * np.log2(n) + n / 64 + 2 * spread)
    return rtol, 4 * TINY[dtype]


def diagnosis(x: Tensor, result: dict, rtol: np.ndarray, atol: float) -> str:
    actual = actual_values(result, x.dtype)
    if actual is None or actual.shape != x.values.shape:
        return ""
    expected = reference(x.values)
    finite = np.isfinite(expected)
    with np.errstate(invalid="ignore"):
        far_below = np.all(x.values < -100, axis=1)  # every exp(x − 0) of such a row underflows to 0 in fp32
    if np.any(np.isnan(actual[far_below]) & finite[far_below]):
        return i18n.t("grader.softmax_row_whose_entries_all")
    if (
        np.any(~np.isfinite(actual) & finite)
        and np.nanmax(np.abs(x.values[np.isfinite(x.values)]), initial=0) > 80
    ):
        return i18n.t("grader.softmax_overflow_inf_exp_x")
    n = x.values.shape[1]
    pads = {1 << max(n - 1, 0).bit_length()} | {-(-n // b) * b for b in (64, 128, 256, 512, 1024, 2048, 4096)}
    for total in sorted(p for p in pads if p > n):
        candidate = reference(x.values, total - n)
        ok = np.isfinite(candidate) & finite
        if ok.any() and np.all(np.abs(actual[ok] - candidate[ok]) <= atol + rtol[ok] * np.abs(candidate[ok])):
            return i18n.t("grader.softmax_masked_off_lanes_count")
    if np.any(np.isnan(actual) & finite):
        return i18n.t("grader.softmax_nan_where_reference_finite")
    return ""


def prepare(case: Case) -> tuple[np.ndarray, np.ndarray, float]:
    """The float64 reference and the tolerances, once per case (made ahead with the next seed's cases)."""
    (x,) = case.args
    expected = cached(case, "expected", lambda: reference(x.values))
    rtol, atol = cached(case, "tolerance", lambda: tolerance(x.values, x.dtype))
    return expected, rtol, atol


def check(case: Case, result: dict) -> list[Failure]:
    (x,) = case.args
    expected, rtol, atol = prepare(case)
    failures = judge(case, result, expected, x.dtype, rtol, atol)

    def layout(generic: bool) -> str:
        return explain_layout(
            case, result, x.dtype, lambda v: reference(v[0]), rtol, atol, ARG_NAMES, generic=generic
        )

    return add_hint(failures, lambda: layout(False) or diagnosis(x, result, rtol, atol) or layout(True))
