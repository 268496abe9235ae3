"""transpose (lesson 7): `transpose(x)` returns a contiguous `x.T` of a 2-D `x` with any strides.

Cost model: reads M·N elements, writes M·N → bytes = 2·M·N·element_size. The output is [N, M], row-major.
"""

from __future__ import annotations

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import Case
from tritonlab.grading.contracts._layout import actual_values, explain_layout
from tritonlab.grading.contracts._twod import one_input_cases, require_contiguous
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "transpose"
ARG_NAMES = ["x"]


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    return one_input_cases(rng, backend)


def check(case: Case, result: dict) -> list[Failure]:
    (x,) = case.args
    failures = judge(case, result, x.values.T, x.dtype, 0.0, 0.0, nan_is_oob_read=True)

    def hint() -> str:
        actual = actual_values(result, x.dtype)
        rows, cols = x.values.shape
        if (
            actual is not None
            and actual.shape == (cols, rows)
            and rows > 1
            and cols > 1
            and np.array_equal(actual.reshape(rows, cols), x.values)
        ):
            return i18n.t("grader.transpose_output_holds_x_s")
        return explain_layout(case, result, x.dtype, lambda v: v[0].T, 0.0, 0.0, ARG_NAMES)

    return add_hint(failures, hint) or require_contiguous(case, result)
