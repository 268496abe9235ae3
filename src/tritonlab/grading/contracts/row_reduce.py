"""row-reduce (lesson 8, before softmax): `row_reduce(x)` returns `(row_max, row_sum)` for a 2-D `x` of any
strides: two new contiguous float32 tensors of shape (M,), the maximum and the sum of each row, computed in
fp32 whatever x's dtype (fp32 or fp16). Rows may be longer than one block.

What it catches: padding lanes loaded with `other=0` (a row of negative numbers then has maximum 0; a sum is
unaffected, so max and sum need different identities: -inf and 0), a stride assumed to be N or 1, and a
reduction that only sees the first block of a long row.

Cost model: reads M·N elements, writes 2·M → bytes ≈ M·N·element_size.
"""

from __future__ import annotations

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import UNIT_ROUNDOFF, Case, Tensor, quantize, random_values
from tritonlab.grading.contracts._layout import actual_values
from tritonlab.grading.contracts.compare import add_hint, compare_values, exception_failure, host_checks
from tritonlab.models import Failure

FUNCTION = "row_reduce"
ARG_NAMES = ["x"]
U32 = UNIT_ROUNDOFF["float32"]


def _case(label: str, values: np.ndarray, dtype: str = "float32", layout: str = "contiguous") -> Case:
    dims = "×".join(str(d) for d in values.shape)
    where = "" if layout == "contiguous" else f" {layout}"
    return Case(f"{label}{dims} {dtype}{where}", (Tensor(quantize(values, dtype), dtype, layout),))


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    def rnd(shape: tuple[int, int], scale: float = 2.0) -> np.ndarray:
        return random_values(rng, shape, "float64", scale)

    negative = -np.abs(rnd((6, 100))) - 0.5  # every entry < 0: a zero-padded max would say 0
    out = [
        _case("", rnd((1, 1))),
        _case("", rnd((3, 7))),
        _case("", rnd((4, 128))),
        _case("", rnd((4, 129))),
        _case("all negative ", negative),
        _case("", rnd((17, 1000))),
        _case("long rows ", rnd((3, 5000))),
        _case("", rnd((int(rng.integers(5, 20)), int(rng.integers(200, 900))))),
        _case("row stride ≠ N: ", rnd((9, 300)), layout="padded"),
        _case("transposed: ", rnd((13, 61)), layout="transposed"),
        _case("every 2nd column: ", rnd((7, 45)), layout="strided"),
        _case("storage offset: ", rnd((5, 77)), layout="offset"),
        _case("", rnd((11, 777)), "float16"),
    ]
    if backend == "gpu":
        out += [_case("", rnd((1823, 4097))), _case("", rnd((64, 65539)), "float16")]
    return out


def check(case: Case, result: dict) -> list[Failure]:
    (x,) = case.args
    v = x.values
    n = max(v.shape[1], 1)
    expected_max = v.max(axis=1)
    expected_sum = v.sum(axis=1)
    sum_atol = U32 * (4 * np.log2(n) + n / 32 + 4) * float(np.abs(v).sum(axis=1).max(initial=0.0)) + 1e-30
    exc = exception_failure(case, result)
    if exc is not None:
        return [exc]
    failures = host_checks(case, result, allow_copies=True, needs_launch=True)
    outputs = result.get("outputs") or []
    if len(outputs) != 2:
        failures.append(
            Failure(
                case.name,
                "wrong-shape",
                i18n.t(
                    "grader.row_reduce_returned_returned_with_n",
                    returned=result.get("returned", "something"),
                    n_outputs=len(outputs),
                ),
                i18n.t("grader.row_reduce_return_both_results_return"),
            )
        )
        return failures
    shape = (v.shape[0],)
    failures += compare_values(
        case, result, expected_max, "float32", 0.0, 0.0, expected_shape=shape, label="row_max"
    )
    failures += compare_values(
        case,
        result,
        expected_sum,
        "float32",
        0.0,
        sum_atol,
        output_index=1,
        expected_shape=shape,
        label="row_sum",
    )

    def hint() -> str:
        got = actual_values(result, "float32", 0)
        negative_rows = expected_max < 0
        if got is not None and got.shape == expected_max.shape and np.any(got[negative_rows] == 0):
            return i18n.t("grader.row_reduce_maximum_row_negative_numbers")
        if x.layout != "contiguous":
            return i18n.t("grader.row_reduce_this_input_not_contiguous")
        if v.shape[1] > 1024:
            return i18n.t("grader.row_reduce_long_row_loop_over")
        return ""

    return add_hint(failures, hint)
