"""copy-2d (lesson 7): `copy_2d(x)` returns a contiguous copy of a 2-D `x` that may be non-contiguous (slices,
transposes, steps); the kernel reads x through its strides.

Cost model: reads M·N elements, writes M·N → bytes = 2·M·N·element_size. Host-side copies (`.contiguous()`)
are not allowed: the point is to read the strided layout in the kernel.
"""

from __future__ import annotations

import numpy as np

from tritonlab.grading.contracts import Case
from tritonlab.grading.contracts._layout import explain_layout
from tritonlab.grading.contracts._twod import one_input_cases, require_contiguous
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "copy_2d"
ARG_NAMES = ["x"]


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    return one_input_cases(rng, backend)


def check(case: Case, result: dict) -> list[Failure]:
    (x,) = case.args
    failures = judge(case, result, x.values, x.dtype, 0.0, 0.0, nan_is_oob_read=True)
    failures = add_hint(
        failures, lambda: explain_layout(case, result, x.dtype, lambda v: v[0], 0.0, 0.0, ARG_NAMES)
    )
    return failures or require_contiguous(case, result)
