"""add-bias (lesson 7): `add_bias(x, bias)` returns `x[M, N] + bias[N]`, the bias broadcast over the rows;
x may have any strides.

Cost model: reads M·N + N elements, writes M·N → bytes ≈ 2·M·N·element_size.
"""

from __future__ import annotations

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import Case, Tensor, random_values, rounding_tol
from tritonlab.grading.contracts._layout import actual_values, explain_layout
from tritonlab.grading.contracts._twod import case_name, make_tensor, shape_plan
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "add_bias"
ARG_NAMES = ["x", "bias"]


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    out = []
    for shape, layout, dtype in shape_plan(rng, backend):
        x = make_tensor(rng, shape, layout, dtype)
        bias = Tensor(
            random_values(rng, (shape[1],), dtype), dtype, "offset" if shape[0] % 3 == 0 else "contiguous"
        )
        extra = {"bf16_arithmetic": True} if dtype == "bfloat16" else {}
        out.append(Case(case_name(x), (x, bias), extra=extra))
    # the bias "may be strided" (hint): every second element of a larger buffer, with x contiguous and not
    for layout in ("contiguous", "transposed"):
        x = make_tensor(rng, (19, 45), layout, "float32")
        bias = Tensor(random_values(rng, (45,), "float32"), "float32", "strided")
        out.append(Case(f"{case_name(x)}, bias strided (stride 2)", (x, bias)))
    return out


def wrong_axis(case: Case, result: dict, rtol: float, atol: float) -> bool:
    """Does the output look like x[i, j] + bias[i] (bias indexed by the row) where that can be read?"""
    x, bias = case.args
    rows, cols = x.values.shape
    actual = actual_values(result, x.dtype)
    if actual is None or actual.shape != (rows, cols) or rows == cols or min(rows, cols) < 2:
        return False
    r = min(rows, cols)
    candidate = x.values[:r] + bias.values[:r, None]
    return bool(np.all(np.abs(actual[:r] - candidate) <= atol + rtol * np.abs(candidate)))


def check(case: Case, result: dict) -> list[Failure]:
    x, bias = case.args
    expected = x.values + bias.values[None, :]
    rtol, atol = rounding_tol(x.dtype, 1.0)
    failures = judge(case, result, expected, x.dtype, rtol, atol, nan_is_oob_read=True)

    def hint() -> str:
        if wrong_axis(case, result, rtol, atol):
            return i18n.t("grader.add_bias_bias_was_added_along")
        return explain_layout(case, result, x.dtype, lambda v: v[0] + v[1][None, :], rtol, atol, ARG_NAMES)

    return add_hint(failures, hint)
