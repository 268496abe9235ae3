"""matmul (lesson 9): `matmul(a, b)` returns `a[M, K] @ b[K, N]` for fp32/fp16/bf16 inputs, accumulated in
fp32, output dtype = input dtype, for any M, N, K ≥ 1 and any strides.

Cost model: 2·M·N·K FLOPs; reads (M·K + K·N)·s bytes at least, writes M·N·s. Tolerance: see _matmul.py.
"""

from __future__ import annotations

import numpy as np

from tritonlab.grading.contracts import UNIT_ROUNDOFF, Case, cached
from tritonlab.grading.contracts import _matmul as mm
from tritonlab.grading.contracts._layout import explain_layout
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "matmul"
ARG_NAMES = ["a", "b"]


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    out = []
    for shape in mm.shape_plan(rng, backend):
        a, b = mm.operands(rng, shape)
        out.append(Case(mm.name_of(shape), (a, b), extra=mm.extra_for(shape[5]) | {"backend": backend}))
    return out


def prepare(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """The float64 product and its error bound, once per case (made ahead with the next seed's cases)."""
    a, b = case.args
    expected = cached(case, "expected", lambda: a.values @ b.values)
    backend = case.extra.get("backend", "interpreter")  # the bound depends on it: part of the key
    return expected, cached(case, f"bound-{backend}", lambda: mm.dot_bound(a, b, backend))


def check(case: Case, result: dict) -> list[Failure]:
    a, b = case.args
    expected, bound = prepare(case)
    rtol = 2 * UNIT_ROUNDOFF[a.dtype]
    failures = judge(case, result, expected, a.dtype, rtol, bound, nan_is_oob_read=True)
    return add_hint(
        failures,
        lambda: (
            mm.k_mask_hint(mm.actual(result, a.dtype), a.values.shape[1])
            or mm.one_tile_hint(a, b, mm.actual(result, a.dtype), bound)
            or mm.accumulator_hint(a, b, mm.actual(result, a.dtype), expected)
            or explain_layout(case, result, a.dtype, lambda v: v[0] @ v[1], rtol, 2 * bound, ARG_NAMES)
        ),
    )
