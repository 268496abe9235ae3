"""persistent-matmul (lesson 14): `persistent_matmul(a, b, num_sms)` returns `a[M, K] @ b[K, N]` like lesson 9's
matmul (fp32/fp16/bf16, fp32 accumulation, output dtype = input dtype, any M, N, K ≥ 1, any strides), computed
by ONE launch of a persistent kernel: a 1-D grid of min(num_sms, tiles) programs, each looping over output
tiles. `num_sms` is stated by the check (contracts/_persistent.py: 132 on a GPU, 4 on the interpreter, and
3 or 7 in two cases); the grid is judged from the replayed launch record.

Cost model: 2·M·N·K FLOPs; reads (M·K + K·N)·s bytes at least, writes M·N·s. Tolerance: see _matmul.py.
"""

from __future__ import annotations

import numpy as np

from tritonlab.grading.contracts import UNIT_ROUNDOFF, Case, cached
from tritonlab.grading.contracts import _matmul as mm
from tritonlab.grading.contracts import _persistent as ps
from tritonlab.grading.contracts._layout import explain_layout
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "persistent_matmul"
ARG_NAMES = ["a", "b", "num_sms"]
GRID_FROM_RECORD = True  # the grid is judged from the launch record the replay runs (grader)


def plan(rng: np.random.Generator, backend: str) -> list[tuple[mm.Shape, int]]:
    sms = ps.stated_sms(backend)
    shapes = [(s, sms) for s in mm.shape_plan(rng, backend, small=True)]
    shapes += [
        ((300, 260, 40, "contiguous", "contiguous", "float32", "more tiles than SMs: "), sms),
        ((200, 330, 24, "contiguous", "contiguous", "float16", "more tiles than SMs: "), ps.ODD_SMS[0]),
        ((130, 100, 16, "contiguous", "contiguous", "float32", "many programs: "), ps.ODD_SMS[1]),
        ((33, 20, 45, "strided", "padded", "float32", "a strided, b padded: "), sms),
    ]
    return shapes


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    out = []
    for shape, sms in plan(rng, backend):
        a, b = mm.operands(rng, shape)
        name = f"{mm.name_of(shape)}, num_sms={sms}"
        out.append(Case(name, (a, b, sms), extra=mm.extra_for(shape[5]) | {"backend": backend}))
    return out


def prepare(case: Case) -> tuple[np.ndarray, np.ndarray]:
    a, b, _sms = case.args
    expected = cached(case, "expected", lambda: a.values @ b.values)
    backend = case.extra.get("backend", "interpreter")
    return expected, cached(case, f"bound-{backend}", lambda: mm.dot_bound(a, b, backend))


def check(case: Case, result: dict) -> list[Failure]:
    a, b, sms = case.args
    expected, bound = prepare(case)
    rtol = 2 * UNIT_ROUNDOFF[a.dtype]
    failures = judge(case, result, expected, a.dtype, rtol, bound, nan_is_oob_read=True)
    failures = add_hint(
        failures,
        lambda: (
            mm.k_mask_hint(mm.actual(result, a.dtype), a.values.shape[1])
            or mm.one_tile_hint(a, b, mm.actual(result, a.dtype), bound)
            or mm.accumulator_hint(a, b, mm.actual(result, a.dtype), expected)
            or explain_layout(case, result, a.dtype, lambda v: v[0] @ v[1], rtol, 2 * bound, ARG_NAMES)
        ),
    )
    m, n = a.values.shape[0], b.values.shape[1]
    return failures + ps.persistence_failures(case, result, m, n, sms)
