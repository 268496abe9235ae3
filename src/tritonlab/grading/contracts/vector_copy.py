"""vector-copy (lesson 2): `vector_copy(x)` returns a new tensor equal to the 1-D tensor `x`.

Cost model: reads n elements, writes n → bytes = 2·n·element_size.
"""

from __future__ import annotations

import numpy as np

from tritonlab.grading import huge
from tritonlab.grading.contracts import Case, Tensor, random_values
from tritonlab.grading.contracts.compare import judge
from tritonlab.models import Failure

FUNCTION = "vector_copy"
ARG_NAMES = ["x"]


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    sizes = [1, 7, 127, 1023, 1024, 1025, 4099, 98432]
    if backend == "gpu":
        sizes += [(1 << 20) + 3, 1 << 24]
    out = [Case(f"n={n} float32", (Tensor(random_values(rng, (n,), "float32"), "float32"),)) for n in sizes]
    out.append(Case("n=0 float32", (Tensor(np.zeros((0,)), "float32"),)))
    for dtype in ("float16", "bfloat16", "int32"):
        out.append(Case(f"n=2053 {dtype}", (Tensor(random_values(rng, (2053,), dtype), dtype),)))
    out.append(
        Case(
            "n=1500 float32, storage offset",
            (Tensor(random_values(rng, (1500,), "float32"), "float32", "offset"),),
        )
    )
    return out


def huge_cases(rng: np.random.Generator) -> list[Case]:
    """GPU only, `check --huge` (grading/huge.py): more than 2³¹ elements, so int32 offsets wrap."""
    n = huge.MIN_ELEMENTS + int(rng.integers(1, 1 << 12))
    gen = huge.Generated(n, "float16", int(rng.integers(0, 1 << 20)))
    return [
        Case(f"huge: n={n} float16", (gen,), extra={"huge": {"kind": "copy", "n": n, "dtype": "float16"}})
    ]


def check(case: Case, result: dict) -> list[Failure]:
    x = case.args[0]
    return judge(case, result, x.values, x.dtype, 0.0, 0.0)
