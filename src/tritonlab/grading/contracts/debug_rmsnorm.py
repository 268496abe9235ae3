"""debug-rmsnorm (lesson 10): `rms_norm(x, weight, eps=1e-6)` returns, for each row of a 2-D x,
`x * rsqrt(mean(x², -1) + eps) * weight`; output dtype = x's dtype. The starter has planted bugs (semantic and
numerical) that these cases expose: ragged rows (mask, mean over N not BLOCK), rows where eps dominates,
fp16 rows whose squares overflow fp16 (upcast!), a row stride ≠ N, long rows.

Cost model: reads M·N + N elements, writes M·N → bytes ≈ 2·M·N·s; ~4 FLOPs per element.
Tolerance: output rounding (twice: normalised value and product) + fp32 sum of N squares and rsqrt.
"""

from __future__ import annotations

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import TINY, UNIT_ROUNDOFF, Case, Tensor, cached, quantize, random_values
from tritonlab.grading.contracts._layout import actual_values, explain_layout
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "rms_norm"
ARG_NAMES = ["x", "weight"]
U32 = UNIT_ROUNDOFF["float32"]


def _case(
    rng: np.random.Generator,
    label: str,
    shape: tuple[int, int],
    dtype: str,
    scale: float = 1.0,
    layout: str = "contiguous",
    eps: float | None = None,
    w_layout: str = "contiguous",
) -> Case:
    x = Tensor(random_values(rng, shape, dtype, scale), dtype, layout)
    w = Tensor(quantize(1.0 + 0.5 * rng.standard_normal(shape[1]), dtype), dtype, w_layout)
    kwargs = {} if eps is None else {"eps": eps}
    dims = "×".join(str(d) for d in shape)
    name = (
        f"{label}{dims} {dtype}"
        + ("" if layout == "contiguous" else f" {layout}")
        + ("" if eps is None else f", eps={eps:g}")
    )
    extra = {"bf16_arithmetic": True} if dtype == "bfloat16" else {}
    return Case(name, (x, w), kwargs, extra=extra)


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    out = [
        _case(rng, "", (1, 1), "float32"),
        _case(rng, "", (3, 7), "float32"),
        _case(rng, "", (4, 127), "float32"),
        _case(rng, "", (4, 128), "float32"),
        _case(rng, "", (4, 129), "float32"),
        _case(rng, "", (17, 1000), "float32"),
        _case(rng, "long rows ", (2, 5000), "float32"),
        _case(rng, "many rows ", (64, 33), "float32"),
        _case(rng, "", (int(rng.integers(3, 12)), int(rng.integers(100, 900))), "float32"),
        _case(rng, "row stride ≠ N: ", (9, 300), "float32", layout="padded"),
        _case(rng, "x transposed: ", (40, 75), "float32", layout="transposed"),
        _case(rng, "x and weight with steps: ", (7, 90), "float32", layout="strided", w_layout="strided"),
        _case(rng, "eps dominates: ", (6, 200), "float32", scale=1e-4),
        _case(rng, "eps given: ", (6, 200), "float32", scale=0.05, eps=1e-2),
        _case(rng, "large values (x² overflows fp16): ", (5, 400), "float16", scale=400.0),
        _case(rng, "", (11, 777), "float16"),
        _case(rng, "x transposed: ", (30, 65), "float16", layout="transposed"),
        _case(rng, "", (11, 777), "bfloat16"),
    ]
    if backend == "gpu":
        out += [
            _case(rng, "large: ", (4096, 4096), "float16"),
            _case(rng, "large: ", (1000, 12289), "float32"),
        ]
    return out


def reference(
    x: np.ndarray, w: np.ndarray, eps: float, divisor: int | None = None, mode: str = "right"
) -> np.ndarray:
    """The float64 reference; `divisor` and `mode` model the classic mistakes for the diagnosis."""
    n = divisor or x.shape[1]
    ms = np.sum(x * x, axis=1, keepdims=True) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = {
            "right": lambda: 1.0 / np.sqrt(ms + eps),
            "outside-sqrt": lambda: 1.0 / (np.sqrt(ms) + eps),
            "after-rsqrt": lambda: 1.0 / np.sqrt(ms) + eps,
            "sqrt": lambda: np.sqrt(ms + eps),
        }[mode]()
    return x * scale * w[None, :]


def overflowed(x: np.ndarray, actual: np.ndarray, expected: np.ndarray) -> bool:
    """Evidence that x² overflowed in float16: in a row whose sum of squares passes 65504, the output is what
    an infinite sum gives (zeros, since rsqrt(inf) = 0, or NaN/Inf) while the reference is finite and not
    zero. A kernel that upcasts and has another bug does not show this."""
    squares = np.sum(x.astype(np.float64) ** 2, axis=1)
    for row in np.flatnonzero(squares > 65504):
        want, got = expected[row], actual[row]
        if np.any(np.isfinite(want) & (want != 0)) and np.all((got == 0) | ~np.isfinite(got)):
            return True
    return False


def diagnosis(case: Case, result: dict, eps: float, rtol: float | np.ndarray, atol: float) -> str:
    x, w = case.args
    actual = actual_values(result, x.dtype)
    if actual is None or actual.shape != x.values.shape:
        return ""
    expected = reference(x.values, w.values, eps)
    if x.dtype == "float16" and overflowed(x.values, actual, expected):
        return i18n.t(
            "grader.debug_rmsnorm_x_overflows_float16_x", max=format(np.max(np.abs(x.values)), ".0f")
        )
    if np.any(~np.isfinite(actual) & np.isfinite(expected)):
        return i18n.t("grader.debug_rmsnorm_nan_inf_where_reference")
    n = x.values.shape[1]
    candidates = {
        i18n.t("grader.debug_rmsnorm_mean_x_divided_by", value_op=1 << (n - 1).bit_length(), n=n): dict(
            divisor=1 << (n - 1).bit_length()
        ),
        i18n.t("grader.debug_rmsnorm_eps_has_no_effect"): dict(eps=0.0),
        i18n.t("grader.debug_rmsnorm_eps_was_added_outside"): dict(mode="outside-sqrt"),
        i18n.t("grader.debug_rmsnorm_eps_was_added_result"): dict(mode="after-rsqrt"),
        i18n.t("grader.debug_rmsnorm_output_multiplied_by_sqrt"): dict(mode="sqrt"),
    }
    for hint, change in candidates.items():
        args = dict(eps=eps) | change
        if args.get("divisor") == n:
            continue
        candidate = reference(x.values, w.values, **args)
        if np.allclose(candidate, expected, rtol=1e-6, atol=0):
            continue
        if np.all(np.abs(actual - candidate) <= atol + 4 * np.asarray(rtol) * np.abs(candidate)):
            return hint
    if np.allclose(actual, reference(x.values, np.ones_like(w.values), eps), rtol=1e-3, atol=1e-6):
        return i18n.t("grader.debug_rmsnorm_weight_was_not_applied")
    return ""


def prepare(case: Case) -> np.ndarray:
    """The float64 reference, once per case (made ahead with the next seed's cases)."""
    x, w = case.args
    eps = float(case.kwargs.get("eps", 1e-6))
    return cached(case, "expected", lambda: reference(x.values, w.values, eps))


def check(case: Case, result: dict) -> list[Failure]:
    x, w = case.args
    eps = float(case.kwargs.get("eps", 1e-6))
    expected = prepare(case)
    n = x.values.shape[1]
    rtol = 4 * UNIT_ROUNDOFF[x.dtype] + U32 * (32 + 4 * np.log2(max(n, 2)) + n / 64)
    atol = 4 * TINY[x.dtype]
    failures = judge(case, result, expected, x.dtype, rtol, atol)

    def layout(generic: bool) -> str:
        return explain_layout(
            case,
            result,
            x.dtype,
            lambda v: reference(v[0], v[1], eps),
            rtol,
            atol,
            ARG_NAMES,
            generic=generic,
        )

    return add_hint(
        failures, lambda: layout(False) or diagnosis(case, result, eps, rtol, atol) or layout(True)
    )
