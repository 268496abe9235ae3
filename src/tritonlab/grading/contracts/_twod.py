"""Shared case plan and checks for the 2-D layout exercises (copy-2d, transpose, add-bias)."""

from __future__ import annotations

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import Case, Tensor, layout_geometry, random_values
from tritonlab.models import Failure

LAYOUTS = ("contiguous", "transposed", "strided", "padded", "offset")


def shape_plan(rng: np.random.Generator, backend: str) -> list[tuple[tuple[int, int], str, str]]:
    """(shape, layout, dtype) triples: tiny, primes, BLOCK±1 for 16/32/64, skinny, every layout and dtype."""
    plan: list[tuple[tuple[int, int], str, str]] = [
        ((1, 1), "contiguous", "float32"),
        ((7, 13), "contiguous", "float32"),
        ((31, 33), "contiguous", "float32"),
        ((32, 64), "contiguous", "float32"),
        ((65, 63), "contiguous", "float32"),
        ((129, 17), "contiguous", "float32"),
        ((3, 300), "contiguous", "float32"),
        ((int(rng.integers(40, 90)), int(rng.integers(40, 90))), "contiguous", "float32"),
        ((45, 70), "transposed", "float32"),
        ((70, 45), "transposed", "float32"),
        ((37, 29), "strided", "float32"),
        ((33, 47), "padded", "float32"),
        ((2, 100), "transposed", "float32"),
        ((100, 1), "strided", "float32"),
        ((23, 41), "offset", "float32"),
        ((61, 35), "contiguous", "float16"),
        ((35, 61), "transposed", "float16"),
        ((61, 35), "padded", "bfloat16"),
    ]
    if backend == "gpu":
        plan += [
            ((4097, 1025), "contiguous", "float32"),
            ((2049, 3001), "transposed", "float16"),
            ((1537, 2050), "strided", "float32"),
        ]
    return plan


def make_tensor(rng: np.random.Generator, shape: tuple[int, ...], layout: str, dtype: str) -> Tensor:
    return Tensor(random_values(rng, shape, dtype), dtype, layout)


def case_name(t: Tensor, prefix: str = "") -> str:
    dims = "×".join(str(d) for d in t.values.shape)
    strides = layout_geometry(tuple(t.values.shape), t.layout)[0]
    where = "" if t.layout == "contiguous" else f" {t.layout} (strides {strides[0]}, {strides[1]})"
    return f"{prefix}{dims} {t.dtype}{where}"


def one_input_cases(rng: np.random.Generator, backend: str) -> list[Case]:
    """One 2-D input per case, over the shared plan of shapes, layouts and dtypes (copy-2d, transpose)."""
    cases = []
    for shape, layout, dtype in shape_plan(rng, backend):
        x = make_tensor(rng, shape, layout, dtype)
        cases.append(Case(case_name(x), (x,)))
    return cases


def require_contiguous(case: Case, result: dict) -> list[Failure]:
    """The contract asks for a contiguous (row-major) result."""
    outputs = result.get("outputs") or []
    if not outputs or outputs[0].get("contiguous", True):
        return []
    meta = outputs[0]
    return [
        Failure(
            case.name,
            "wrong-shape",
            i18n.t("grader.twod_result_has_strides_stride", stride=tuple(meta["stride"])),
            i18n.t("grader.twod_allocate_result_with_torch"),
        )
    ]
