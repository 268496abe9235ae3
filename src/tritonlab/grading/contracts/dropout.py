"""dropout (lesson 13): a fused residual + dropout whose mask is never stored.

    dropout_add(x, residual, p, seed, offset=0) -> y          y = residual + x·mask/(1 − p), x's dtype
    dropout_add_backward(grad, p, seed, offset=0) -> dx       dx = grad·mask/(1 − p), grad's dtype

x, residual and grad are 2-D (M, N) with any strides; y and dx are new (M, N) tensors. Element (r, c) is kept
(mask = 1) with probability 1 − p, decided by ONE uniform number drawn for the counter `offset + r·N + c`
under `seed` (`tl.rand(seed, offset + index)`): so the mask is a function of (seed, offset + index) alone, the
backward regenerates it, and nothing is stored between the two calls. p outside [0, 1) raises ValueError.

Each case calls, in this order: the backward (first: no forward call has run with these arguments, so a mask
kept from a forward cannot be what it uses), the forward, the forward with seed + 1, and the forward with
offset + shift. The parent reads each output's mask from its values (dx: zero or grad/(1 − p); y: residual or
residual + x/(1 − p), ambiguous where x/(1 − p) is below y's rounding) and judges:
values (every element one of its two allowed values), the same mask in the forward and the backward, the keep
rate (within 6 standard deviations of 1 − p), no repetition (the agreement of the mask with itself shifted by
1, by N and by every power of two is within 6 standard deviations of p² + (1 − p)²: a mask repeated per block
or per row fails), another seed gives another mask (disagreement near 2p(1 − p)), and offset + shift gives the
same mask shifted by `shift` elements. The four outputs are replayed from the inputs alone (grading/replay/).

Interpreter sizes: Philox costs about as much as the rest of the kernel per element on the interpreter,
and each case runs four calls, so the cases hold 2000–4000 elements: enough for the statistics at 6 deviations.

Cost model: the forward reads 2·M·N and writes M·N elements, the backward reads and writes M·N each; the mask
is ALU work (Philox) and moves no bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import TINY, UNIT_ROUNDOFF, Case, Tensor, random_values, result_error
from tritonlab.grading.contracts._layout import actual_values
from tritonlab.grading.contracts.compare import compare_values, exception_failure, host_checks
from tritonlab.models import Failure

FUNCTION = "dropout_add"
BACKWARD = "dropout_add_backward"
ARG_NAMES = ["x", "residual", "grad", "p", "seed", "offset"]
CALLS = ("backward", "forward", "forward, seed + 1", "forward, offset + shift")
Z = 6.0  # standard deviations a statistic may stray: a right kernel fails one check in ~10⁹
MIN_STATS = 2000  # elements below which the keep rate and the repetition tests say nothing


def counters(rng: np.random.Generator) -> tuple[int, int, int]:
    """(seed, offset, shift) for a case's four calls, drawn so that the calls share one compiled kernel: Triton
    specialises an integer argument equal to 1 or divisible by 16, so a seed, seed + 1, offset or offset + shift
    that happened to be one compiled a kernel of its own on a GPU (a dropout kernel is mostly Philox, about
    0.65 CPU s to compile for cuda:90: `benchmarks/check_compiles.py`). None of the four is 1 or a multiple of
    16 now; the values are otherwise as random as before (the shift any of 1–96: a mask shifted by 16 only
    would hide a kernel that draws one number per 16 elements)."""
    shift = int(rng.integers(1, 97))
    seed = 16 * int(rng.integers(0, 2**27 - 1)) + int(rng.integers(2, 15))  # seed % 16 in 2..14: seed + 1 too
    residues = [r for r in range(2, 16) if (r + shift) % 16 != 0]
    offset = 16 * int(rng.integers(0, 1 << 16)) + int(rng.choice(residues))
    return seed, offset, shift


def _case(
    rng: np.random.Generator,
    label: str,
    shape: tuple[int, int],
    dtype: str,
    p: float,
    *,
    layout: str = "contiguous",
    expect_error: str | None = None,
) -> Case:
    x = Tensor(random_values(rng, shape, dtype), dtype, layout)
    residual = Tensor(random_values(rng, shape, dtype), dtype, layout)
    grad = Tensor(random_values(rng, shape, dtype), dtype, layout)
    seed, offset, shift = counters(rng)
    dims = "×".join(str(d) for d in shape)
    name = f"{label}{dims} {dtype} p={p:g}" + ("" if layout == "contiguous" else f", {layout}")
    extra: dict[str, Any] = {"shift": shift}
    if dtype == "bfloat16":
        extra["bf16_arithmetic"] = True
    return Case(name, (x, residual, grad, p, seed, offset), expect_error=expect_error, extra=extra)


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    out = [
        _case(rng, "one element: ", (1, 1), "float32", 0.3),
        _case(rng, "", (40, 100), "float32", 0.3),
        _case(rng, "high p: ", (20, 129), "float32", 0.8),
        _case(rng, "p = 0 keeps everything: ", (9, 50), "float32", 0.0),
        _case(rng, "transposed: ", (100, 24), "float32", 0.5, layout="transposed"),
        _case(rng, "row stride ≠ N: ", (30, 67), "float16", 0.1, layout="padded"),
        _case(rng, "", (30, 111), "bfloat16", 0.2),
        _case(rng, "p = 1 is refused: ", (4, 8), "float32", 1.0, expect_error="ValueError"),
    ]
    if backend == "gpu":
        out += [
            _case(rng, "large: ", (4096, 4096), "bfloat16", 0.1),
            _case(rng, "large: ", (8191, 1000), "float32", 0.3),
        ]
    return out


def run_case(fn: Any, case_spec: dict, tools: Any) -> dict:
    """The backward first, then three forwards (same seed and offset; seed + 1; offset + shift)."""
    import sys

    x, residual, grad, p, seed, offset = (tools.build_arg(a) for a in case_spec["args"])
    if case_spec.get("expect_error"):
        return {"json": {"returned": "raised nothing"}, "tensors": [fn(x, residual, p, seed, offset=offset)]}
    module = sys.modules.get("learner")
    backward = getattr(module, BACKWARD, None) or getattr(fn, "__globals__", {}).get(BACKWARD)
    if not callable(backward):
        raise AttributeError(i18n.t("grader.dropout_file_defines_no_function", BACKWARD=BACKWARD))
    shift = int(case_spec.get("extra", {}).get("shift", 1))
    results = [
        backward(grad, p, seed, offset=offset),
        fn(x, residual, p, seed, offset=offset),
        fn(x, residual, p, seed + 1, offset=offset),
        fn(x, residual, p, seed, offset=offset + shift),
    ]
    import torch

    returned = [type(r).__name__ for r in results]
    tensors = [r if isinstance(r, torch.Tensor) else torch.zeros(0) for r in results]
    return {"json": {"returned": returned}, "tensors": tensors}


# ---- reading the masks from the outputs ------------------------------------------------------------------


def value_tolerance(dtype: str, *magnitudes: np.ndarray) -> np.ndarray:
    """Rounding of the output plus a few fp32 operations on terms of these magnitudes."""
    total = sum(np.abs(m) for m in magnitudes)
    return 2 * UNIT_ROUNDOFF[dtype] * total + 8 * UNIT_ROUNDOFF["float32"] * total + 4 * TINY[dtype]


def mask_from(actual: np.ndarray, dropped: np.ndarray, kept: np.ndarray, tol: np.ndarray) -> tuple:
    """(kept: bool array, known: bool array, bad: indices that are neither allowed value)."""
    is_kept = np.abs(actual - kept) <= tol
    is_dropped = np.abs(actual - dropped) <= tol
    bad = np.flatnonzero(~(is_kept | is_dropped))
    return is_kept, is_kept ^ is_dropped, bad


def masks(case: Case, result: dict) -> dict[str, tuple] | None:
    """Per call: (kept, known, bad indices) from the output's values; None when an output is unusable."""
    x, residual, grad, p, _seed, _offset = case.args
    scale = 1.0 / (1.0 - p)
    out: dict[str, tuple] = {}
    for index, call in enumerate(CALLS):
        dtype = grad.dtype if index == 0 else x.dtype
        actual = actual_values(result, dtype, index=index)
        if actual is None or actual.shape != x.values.shape:
            return None
        if index == 0:
            kept = grad.values * scale
            out[call] = mask_from(actual, np.zeros_like(kept), kept, value_tolerance(dtype, kept))
        else:
            kept = residual.values + x.values * scale
            tol = value_tolerance(dtype, residual.values, x.values * scale)
            out[call] = mask_from(actual, residual.values, kept, tol)
    return out


# ---- the statistics -----------------------------------------------------------------------------------------


def strays(value: float, mean: float, count: int) -> bool:
    """Does a fraction measured over `count` Bernoulli(mean) draws lie more than Z deviations from mean?"""
    sigma = np.sqrt(max(mean * (1 - mean), 0.0) / max(count, 1))
    return abs(value - mean) > Z * sigma + 1e-12


def lags(n: int, n_cols: int) -> list[int]:
    found = {1, n_cols} | {1 << k for k in range(4, 24)}
    return sorted(lag for lag in found if 1 <= lag <= n // 2)


def flat(m: dict[str, tuple], index: int) -> tuple[np.ndarray, np.ndarray]:
    """(kept, known) of call `index`, flattened in row-major order (the order of the counters)."""
    kept, known, _bad = m[CALLS[index]]
    return kept.reshape(-1), known.reshape(-1)


def judge_masks(case: Case, m: dict[str, tuple]) -> list[Failure]:
    x, _residual, _grad, p, _seed, _offset = case.args
    n_rows, n_cols = x.values.shape
    name = case.name
    failures = []
    kept_b, known_b = flat(m, 0)
    kept_f, known_f = flat(m, 1)
    both = known_b & known_f
    differ = np.flatnonzero(both & (kept_b != kept_f))
    if differ.size:
        failures.append(
            Failure(
                name,
                "wrong-result",
                i18n.t(
                    "grader.dropout_backward_s_mask_differs",
                    size=differ.size,
                    sum=int(both.sum()),
                    differ=int(differ[0]),
                ),
                i18n.t("grader.dropout_both_calls_must_draw"),
            )
        )
    n = kept_b.size
    keep = 1.0 - p
    rate = float(kept_b.mean()) if n else 1.0
    if n >= MIN_STATS and strays(rate, keep, n) or (p == 0 and n and rate != 1.0):
        cause = (
            i18n.t("grader.dropout_element_must_be_kept", keep=format(keep, "g"))
            if abs(rate - p) < abs(rate - keep)
            else i18n.t("grader.dropout_keep_rate_not_what")
        )
        failures.append(
            Failure(
                name,
                "wrong-result",
                i18n.t(
                    "grader.dropout_rate_elements_were_kept", rate=format(rate, ".4f"), keep=format(keep, "g")
                ),
                cause,
            )
        )
    if n >= MIN_STATS and 0 < p < 1:
        agree = p * p + keep * keep
        for lag in lags(n, n_cols):
            same = float(np.mean(kept_b[lag:] == kept_b[:-lag]))
            if strays(same, agree, n - lag):
                what = (
                    i18n.t("grader.dropout_every_row")
                    if lag == n_cols
                    else i18n.t("grader.dropout_every_lag_elements", lag=lag)
                )
                failures.append(
                    Failure(
                        name,
                        "wrong-result",
                        i18n.t(
                            "grader.dropout_mask_repeats_element_i",
                            lag=lag,
                            same=format(same, ".3f"),
                            agree=format(agree, ".3f"),
                        ),
                        i18n.t("grader.dropout_same_random_numbers_come", what=what),
                    )
                )
                break
    failures += seed_and_shift(case, m)
    return failures


def seed_and_shift(case: Case, m: dict[str, tuple]) -> list[Failure]:
    _x, _residual, _grad, p, _seed, _offset = case.args
    name = case.name
    failures = []
    kept_f, known_f = flat(m, 1)
    kept_s, known_s = flat(m, 2)
    both = known_f & known_s
    count = int(both.sum())
    if count >= MIN_STATS and 0 < p < 1:
        expect = 2 * p * (1 - p)
        apart = float(np.mean(kept_f[both] != kept_s[both]))
        if strays(apart, expect, count):
            failures.append(
                Failure(
                    name,
                    "wrong-result",
                    i18n.t(
                        "grader.dropout_seed_seed_1_give",
                        apart=format(apart, ".3f"),
                        expect=format(expect, ".3f"),
                    ),
                    i18n.t("grader.dropout_pass_seed_argument_tl"),
                )
            )
    shift = int(case.extra.get("shift", 1))
    kept_o, known_o = flat(m, 3)
    if kept_f.size > shift:
        ok = known_o[:-shift] & known_f[shift:]
        wrong = np.flatnonzero(ok & (kept_o[:-shift] != kept_f[shift:]))
        if wrong.size:
            failures.append(
                Failure(
                    name,
                    "wrong-result",
                    i18n.t(
                        "grader.dropout_with_offset_shift_element",
                        shift=shift,
                        size=wrong.size,
                        sum=int(ok.sum()),
                    ),
                    i18n.t("grader.dropout_counter_element_r_c"),
                )
            )
    return failures


FIRST_CALL = i18n.t("grader.dropout_each_case_calls_backward", BACKWARD=BACKWARD, FUNCTION=FUNCTION)


def check(case: Case, result: dict) -> list[Failure]:
    exc = exception_failure(case, result)
    if exc is not None:
        if exc.kind == "exception" and not exc.cause:
            exc = Failure(exc.case, exc.kind, exc.message, FIRST_CALL, exc.where)
        return [exc]
    name = case.name
    if case.expect_error:
        if result_error(result) is not None:
            return []  # raised what was expected (exception_failure checked the type)
        return [
            Failure(
                name,
                "missing-validation",
                i18n.t(
                    "grader.dropout_dropout_add_p_args",
                    args=repr(case.args[3]),
                    expect_error=case.expect_error,
                ),
                i18n.t("grader.dropout_check_p_host_raise", expect_error=case.expect_error),
            )
        ]
    data = result.get("data") or {}
    returned = data.get("returned") or []
    if not isinstance(returned, list) or returned.count("Tensor") != len(CALLS):
        return [
            Failure(
                name,
                "wrong-result",
                i18n.t("grader.dropout_expected_tensor_from_each", CALLS=", ".join(CALLS), returned=returned),
                i18n.t("grader.dropout_function_returns_y_backward", FUNCTION=FUNCTION, BACKWARD=BACKWARD),
            )
        ]
    x, residual, grad, p, _seed, _offset = case.args
    failures = host_checks(case, result, allow_copies=False, needs_launch=True, max_launches=len(CALLS))
    m = masks(case, result)
    scale = 1.0 / (1.0 - p)
    for index, call in enumerate(CALLS):
        dtype = grad.dtype if index == 0 else x.dtype
        found = compare_values(
            case, result, x.values, dtype, np.inf, np.inf, output_index=index, label=call
        )  # shape, dtype, unwritten, NaN: the values are judged through the mask below
        failures += found
        if found or m is None:
            continue
        _kept, _known, bad = m[call]
        if bad.size:
            actual = actual_values(result, dtype, index=index).reshape(-1)
            i = int(bad[0])
            if index == 0:
                allowed = f"0 or {grad.values.reshape(-1)[i] * scale:.6g}"
            else:
                r = residual.values.reshape(-1)[i]
                allowed = f"{r:.6g} or {r + x.values.reshape(-1)[i] * scale:.6g}"
            failures.append(
                Failure(
                    name,
                    "wrong-result",
                    i18n.t(
                        "grader.dropout_call_size_element_s",
                        call=call,
                        size=bad.size,
                        i=i,
                        actual=format(actual[i], ".6g"),
                        allowed=allowed,
                    ),
                    i18n.t("grader.dropout_kept_element_divided_by", value_minus=format(1 - p, "g")),
                )
            )
    if m is not None and not any(f.kind != "too-many-launches" for f in failures if f.case == name):
        failures += judge_masks(case, m)
    return failures
