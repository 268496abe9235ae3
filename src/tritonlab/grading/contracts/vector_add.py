"""vector-add (lesson 5): `vector_add(x, y)` returns x + y for same-shape tensors of any shape and size ≥ 0,
contiguous or not, and raises ValueError with a clear message when shapes, dtypes or devices differ.

Cost model: reads 2·n elements, writes n → bytes = 3·n·element_size. Copies to contiguous memory
(`.contiguous()`) are allowed on the host; arithmetic in torch is not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tritonlab.grading import huge
from tritonlab.grading.contracts import Case, Tensor, cached, random_values, rounding_tol
from tritonlab.grading.contracts._layout import explain_layout
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "vector_add"
ARG_NAMES = ["x", "y"]
BF16 = {"bf16_arithmetic": True}


def _t(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    dtype: str = "float32",
    layout: str = "contiguous",
    scale: float = 1.0,
) -> Tensor:
    return Tensor(random_values(rng, shape, dtype, scale), dtype, layout)


def _pair(
    rng: np.random.Generator,
    name: str,
    shape: tuple[int, ...],
    dtype: str = "float32",
    layouts: tuple[str, str] = ("contiguous", "contiguous"),
    extra: dict | None = None,
) -> Case:
    dims = "×".join(str(d) for d in shape)
    return Case(
        f"{name} {dims} {dtype}",
        (_t(rng, shape, dtype, layouts[0]), _t(rng, shape, dtype, layouts[1])),
        extra=dict(extra or {}),
    )


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    sizes = [1, 7, 1023, 1024, 1025, 4099, 20011, int(rng.integers(3000, 9000))]
    if backend == "gpu":
        sizes += [(1 << 20) + 3, (1 << 24) + 1]
    out = [_pair(rng, "n=", (n,)) for n in sizes]
    out += [
        _pair(rng, "2-D", (33, 65)),
        _pair(rng, "0-d", ()),
        _pair(rng, "3-D", (3, 5, 7)),
        _pair(rng, "both transposed", (45, 37), layouts=("transposed", "transposed")),
        _pair(rng, "x transposed, y contiguous", (37, 45), layouts=("transposed", "contiguous")),
        _pair(rng, "x every 2nd element", (1531,), layouts=("strided", "contiguous")),
        _pair(rng, "y padded rows", (29, 41), layouts=("contiguous", "padded")),
        _pair(rng, "storage offset", (777,), layouts=("offset", "offset")),
        _pair(rng, "n=", (0,)),
        _pair(rng, "empty", (4, 0)),
        _pair(rng, "n=", (2053,), "float16"),
        _pair(rng, "transposed", (17, 31), "float16", ("transposed", "transposed")),
        _pair(rng, "n=", (2053,), "bfloat16", extra=BF16),
    ]
    bad = [
        ("shapes differ (5,) vs (6,)", _t(rng, (5,)), _t(rng, (6,)), {}),
        ("shapes differ (4, 6) vs (6, 4), same size", _t(rng, (4, 6)), _t(rng, (6, 4)), {}),
        ("dtypes differ float32 vs float16", _t(rng, (100,)), _t(rng, (100,), "float16"), {}),
        ("devices differ", _t(rng, (100,)), _t(rng, (100,)), {"other_device": 1}),
    ]
    out += [Case(name, (x, y), expect_error="ValueError", extra=extra) for name, x, y, extra in bad]
    return out


def huge_cases(rng: np.random.Generator) -> list[Case]:
    """GPU only, `check --huge` (grading/huge.py): more than 2³¹ elements, so int32 offsets wrap."""
    n = huge.MIN_ELEMENTS + int(rng.integers(1, 1 << 12))
    x, y = (huge.Generated(n, "float16", int(rng.integers(0, 1 << 20))) for _ in range(2))
    return [Case(f"huge: n={n} float16", (x, y), extra={"huge": {"kind": "add", "n": n, "dtype": "float16"}})]


def run_case(fn: Any, case_spec: dict, tools: Any) -> Any:
    """Call vector_add; for the device case, move y to another device (meta on the CPU, cpu on a GPU)."""
    args = [tools.build_arg(a) for a in case_spec["args"]]
    index = case_spec.get("extra", {}).get("other_device")
    if index is not None:
        from tritonlab.grading import guards

        with guards.paused():
            args[index] = args[index].to("cpu" if tools.device != "cpu" else "meta")
    return fn(*args)


def check(case: Case, result: dict) -> list[Failure]:
    x, y = case.args
    if case.expect_error:
        return judge(case, result, np.zeros(0), x.dtype, 0.0, 0.0, allow_copies=True)
    expected = cached(case, "expected", lambda: x.values + y.values)
    rtol, atol = rounding_tol(x.dtype, 1.0)
    failures = judge(case, result, expected, x.dtype, rtol, atol, allow_copies=True)

    def hint() -> str:
        if all(t.layout in ("contiguous", "offset") for t in (x, y)):
            return ""
        return explain_layout(case, result, x.dtype, lambda v: v[0] + v[1], rtol, atol, ARG_NAMES)

    return add_hint(failures, hint)
