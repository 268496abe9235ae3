"""rmsnorm-backward (lesson 11): `rms_norm_backward(x, weight, dy, eps=1e-6)` returns `(dx, dw)`, the gradients
of `y = x · rsqrt(mean(x², -1) + eps) · weight` (x of shape (M, N), any strides) for the upstream gradient dy:

    rstd = rsqrt(mean(x², -1) + eps),  g = dy · weight
    dx   = rstd · g − x · rstd³ · mean(g · x, -1)        (x's dtype, shape (M, N))
    dw   = Σ_rows dy · x · rstd                          (weight's dtype, shape (N,))

dw is a reduction across rows, so across programs: the exercise asks for partial sums per program and a second
kernel that adds them, in Triton (a torch `.sum()` on the host is a torch fallback). On the repeat cases
(`extra["repeat"]`: the smallest, many rows, long rows, and every GPU case) the contract calls the function
twice and requires bit-identical dx and dw: the deterministic scheme promises that, while atomics (whose order
of additions varies on a GPU) do not. On the interpreter programs run one after another, so there the repeat
catches state carried between calls (a buffer kept and not cleared), and atomics only on a GPU.

Cost model: reads x, dy (M·N each) and weight, writes dx (M·N), plus P·N fp32 partials written and re-read
→ bytes ≈ 3·M·N·s; ~10 FLOPs per element.
Tolerance: the output's rounding plus fp32 error ~u32·(log2 N + N/64) on every term of dx (with its
cancellation counted through the absolute values of both terms) and ~u32·(log2 M + M/16) on dw's sum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import TINY, UNIT_ROUNDOFF, Case, Tensor, quantize, random_values
from tritonlab.grading.contracts.compare import add_hint, compare_values, exception_failure, host_checks
from tritonlab.models import Failure

# Each case calls the function twice (dw must come back with the same bits). The launch replay
# (grading/replay/) redoes the first call's trace only: run_case cuts the second call's events from it, and
# the first call's (dx, dw) must come out of those launches alone.
REPLAY = True

FUNCTION = "rms_norm_backward"
ARG_NAMES = ["x", "weight", "dy"]
U32 = UNIT_ROUNDOFF["float32"]


def _case(
    rng: np.random.Generator,
    label: str,
    shape: tuple[int, int],
    dtype: str,
    *,
    x_layout: str = "contiguous",
    dy_layout: str = "contiguous",
    scale: float = 1.0,
    eps: float | None = None,
    repeat: bool = False,
) -> Case:
    x = Tensor(random_values(rng, shape, dtype, scale), dtype, x_layout)
    w = Tensor(quantize(1.0 + 0.5 * rng.standard_normal(shape[1]), dtype), dtype)
    dy = Tensor(random_values(rng, shape, dtype), dtype, dy_layout)
    kwargs = {} if eps is None else {"eps": eps}
    dims = "×".join(str(d) for d in shape)
    where = "".join(
        f" {name} {lay}" for name, lay in (("x", x_layout), ("dy", dy_layout)) if lay != "contiguous"
    )
    name = f"{label}{dims} {dtype}{where}" + ("" if eps is None else f", eps={eps:g}")
    extra = {"bf16_arithmetic": True} if dtype == "bfloat16" else {}
    if repeat:  # called twice: the bits must repeat (the determinism promise; state kept between calls)
        extra["repeat"] = True
    return Case(name, (x, w, dy), kwargs, extra=extra)


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    out = [
        _case(rng, "", (1, 1), "float32", repeat=True),
        _case(rng, "", (3, 7), "float32"),
        _case(rng, "", (5, 128), "float32"),
        _case(rng, "", (9, 129), "float32"),
        # more rows than a program takes on the CPU (8 programs there) and more partial sums than a 64-row
        # block of a reduction kernel: a dw made by one program, or a reduction without its loop, is caught
        _case(rng, "many rows (dw sums across programs) ", (72, 24), "float32", repeat=True),
        _case(rng, "", (int(rng.integers(10, 40)), int(rng.integers(30, 300))), "float32"),
        _case(rng, "long rows ", (3, 3000), "float32", repeat=True),
        _case(rng, "row stride ≠ N: ", (17, 100), "float32", x_layout="padded", dy_layout="padded"),
        _case(rng, "transposed: ", (40, 33), "float32", x_layout="transposed", dy_layout="strided"),
        _case(rng, "eps given: ", (6, 50), "float32", scale=0.05, eps=1e-2),
        _case(rng, "", (24, 200), "float16"),
        _case(rng, "large values: ", (7, 300), "float16", scale=300.0),
        _case(rng, "", (33, 160), "bfloat16"),
    ]
    if backend == "gpu":
        out += [
            _case(rng, "large: ", (4096, 4096), "bfloat16", repeat=True),
            _case(rng, "large: ", (8191, 1000), "float32", repeat=True),
            _case(rng, "large, transposed: ", (2048, 2048), "float16", x_layout="transposed", repeat=True),
        ]
    return out


def parts(x: np.ndarray, w: np.ndarray, dy: np.ndarray, eps: float) -> dict[str, np.ndarray]:
    """float64 gradients and the magnitudes of their terms (for the tolerances)."""
    n = max(x.shape[1], 1)
    rstd = 1.0 / np.sqrt(np.sum(x * x, axis=1, keepdims=True) / n + eps)
    g = dy * w[None, :]
    c = np.sum(g * x, axis=1, keepdims=True) / n
    c_abs = np.sum(np.abs(g * x), axis=1, keepdims=True) / n
    return {
        "dx": rstd * g - x * rstd**3 * c,
        "dx_mag": rstd * np.abs(g) + np.abs(x) * rstd**3 * c_abs,
        "dw": np.sum(dy * x * rstd, axis=0),
        "dw_mag": np.sum(np.abs(dy * x * rstd), axis=0),
        "dw_rows": dy * x * rstd,
    }


def reference(
    x: np.ndarray, w: np.ndarray, dy: np.ndarray, eps: float = 1e-6
) -> tuple[np.ndarray, np.ndarray]:
    p = parts(x, w, dy, eps)
    return p["dx"], p["dw"]


def run_case(fn: Any, case_spec: dict, tools: Any) -> dict:
    """Call the learner on the case; on a repeat case, twice on equal inputs, keeping the first result (the
    second is only compared bit for bit: the determinism promise, and no state carried between calls). The
    second call gets fresh tensors with the same values, never the first call's objects. The other cases call
    once: on the interpreter a kernel runs as much again per call."""
    args = [tools.build_arg(a) for a in case_spec["args"]]
    kwargs = {k: tools.build_arg(v) for k, v in case_spec.get("kwargs", {}).items()}
    first = fn(*args, **kwargs)
    tensors = list(first) if isinstance(first, (tuple, list)) else [first]
    info: dict[str, Any] = {"returned": type(first).__name__, "count": len(tensors)}
    if not case_spec.get("extra", {}).get("repeat"):
        return {"json": info, "tensors": tensors}
    from tritonlab.grading import guards

    rec = guards._ACTIVE
    launches = len(rec.launches) if rec is not None else 0
    events = len(rec.trace) if rec is not None else 0
    # the repeat gets fresh tensors of equal values (new storage, not the same objects): a result cached by
    # input identity cannot answer it, and state kept between calls shows
    args = [tools.build_arg(a) for a in case_spec["args"]]
    kwargs = {k: tools.build_arg(v) for k, v in case_spec.get("kwargs", {}).items()}
    try:
        second = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the first call's verdict stands; report the second
        info["repeat_error"] = f"{type(exc).__name__}: {exc}"[:300]
        return {"json": info, "tensors": tensors}
    if rec is not None:
        info["launches_per_call"] = launches
        del rec.launches[launches:]  # judge the launches of one call
        del rec.trace[events:]  # and replay them: the second call is only the determinism check
    again = list(second) if isinstance(second, (tuple, list)) else [second]
    import torch

    with guards.paused():
        info["same_bits"] = [
            bool(
                isinstance(a, torch.Tensor)
                and isinstance(b, torch.Tensor)
                and a.shape == b.shape
                and a.dtype == b.dtype
                and torch.equal(guards._as_bits(a.contiguous()), guards._as_bits(b.contiguous()))
            )
            for a, b in zip(tensors, again, strict=False)
        ]
    return {"json": info, "tensors": tensors}


def tolerances(case: Case) -> dict[str, Any]:
    x, w, dy = case.args
    eps = float(case.kwargs.get("eps", 1e-6))
    p = parts(x.values, w.values, dy.values, eps)
    m, n = x.values.shape
    k_dx = 16 + 4 * np.log2(max(n, 2)) + n / 64
    k_dw = 16 + 4 * np.log2(max(m, 2)) + m / 16 + k_dx
    return {
        "p": p,
        "eps": eps,
        "dx": (2 * UNIT_ROUNDOFF[x.dtype], U32 * k_dx * p["dx_mag"] + 4 * TINY[x.dtype]),
        "dw": (2 * UNIT_ROUNDOFF[w.dtype], U32 * k_dw * p["dw_mag"] + 4 * TINY[w.dtype]),
    }


def diagnosis_dw(case: Case, result: dict, tol: dict) -> str:
    from tritonlab.grading.contracts._layout import actual_values

    x, w, _dy = case.args
    actual = actual_values(result, w.dtype, index=1)
    if actual is None:
        return ""
    rows = tol["p"]["dw_rows"]
    rt, at = tol["dw"]
    launches = result.get("launches", [])
    programs = 0
    if launches and launches[0].get("grid"):
        programs = int(np.prod(launches[0]["grid"]))  # every axis: a grid of (1, P) starts P programs
    if programs > 1 and rows.shape[0] > 1:
        band = -(-rows.shape[0] // programs)
        for lo in (band * (programs - 1), 0):
            only = rows[lo : lo + band].sum(axis=0)
            if np.all(np.abs(actual - only) <= at + 4 * rt * np.abs(only) + 1e-6 * np.abs(only)):
                return i18n.t("grader.rmsnorm_backward_dw_holds_sum_one")
    if np.all(np.abs(actual - rows[-1]) <= at + 4 * rt * np.abs(rows[-1])) and rows.shape[0] > 1:
        return i18n.t("grader.rmsnorm_backward_dw_holds_only_last")
    no_rstd = (case.args[2].values * x.values).sum(axis=0)
    if np.allclose(actual, no_rstd, rtol=1e-3, atol=1e-6):
        return i18n.t("grader.rmsnorm_backward_dw_dy_x_without")
    return ""


def diagnosis_dx(case: Case, result: dict, tol: dict) -> str:
    from tritonlab.grading.contracts._layout import actual_values

    x, w, dy = case.args
    actual = actual_values(result, x.dtype)
    if actual is None or actual.shape != x.values.shape:
        return ""
    eps = tol["eps"]
    n = x.values.shape[1]
    rstd = 1.0 / np.sqrt(np.sum(x.values**2, axis=1, keepdims=True) / n + eps)
    g = dy.values * w.values[None, :]
    rt, at = tol["dx"]

    def close(candidate: np.ndarray) -> bool:
        return bool(
            np.all(np.abs(actual - candidate) <= at + 4 * rt * np.abs(candidate) + 1e-5 * np.abs(candidate))
        )

    if close(rstd * g):
        return i18n.t("grader.rmsnorm_backward_dx_misses_second_term")
    if close(rstd * dy.values - x.values * rstd**3 * np.mean(dy.values * x.values, axis=1, keepdims=True)):
        return i18n.t("grader.rmsnorm_backward_weight_missing_from_dx")
    xhat = x.values * rstd
    mean_g = np.mean(g, axis=1, keepdims=True)
    if close(rstd * (g - mean_g - xhat * np.mean(g * xhat, axis=1, keepdims=True))):
        return i18n.t("grader.rmsnorm_backward_dx_has_mean_g")
    mu = np.mean(x.values, axis=1, keepdims=True)
    r_ln = 1.0 / np.sqrt(np.mean((x.values - mu) ** 2, axis=1, keepdims=True) + eps)
    xc = (x.values - mu) * r_ln
    if close(r_ln * (g - mean_g - xc * np.mean(g * xc, axis=1, keepdims=True))):
        return i18n.t("grader.rmsnorm_backward_dx_layernorm_s_gradient")
    block = 1 << max(n - 1, 0).bit_length()
    if block != n and close(
        rstd * g - x.values * rstd**3 * np.sum(g * x.values, axis=1, keepdims=True) / block
    ):
        return i18n.t("grader.rmsnorm_backward_mean_g_x_was", block=block, n=n)
    return ""


def check(case: Case, result: dict) -> list[Failure]:
    x, w, _dy = case.args
    exc = exception_failure(case, result)
    if exc is not None:
        return [exc]
    data = result.get("data") or {}
    fn = result.get("function", FUNCTION)
    if data.get("count", 0) != 2:
        return [
            Failure(
                case.name,
                "wrong-result",
                i18n.t(
                    "grader.rmsnorm_backward_fn_returned_returned_with",
                    fn=fn,
                    returned=data.get("returned", result.get("returned")),
                    count=data.get("count", 0),
                ),
                i18n.t("grader.rmsnorm_backward_return_dx_dw"),
            )
        ]
    tol = tolerances(case)
    has_data = x.values.size > 0
    failures = host_checks(case, result, allow_copies=False, needs_launch=has_data)
    dx_f = compare_values(case, result, tol["p"]["dx"], x.dtype, *tol["dx"], output_index=0, label="dx")
    dw_f = compare_values(case, result, tol["p"]["dw"], w.dtype, *tol["dw"], output_index=1, label="dw")
    dx_f = add_hint(dx_f, lambda: diagnosis_dx(case, result, tol))
    dw_f = add_hint(dw_f, lambda: diagnosis_dw(case, result, tol))
    failures += dx_f + dw_f
    if "repeat_error" in data:
        failures.append(
            Failure(
                case.name,
                "exception",
                i18n.t(
                    "grader.rmsnorm_backward_second_call_raised_repeat", repeat_error=data["repeat_error"]
                ),
                "",
            )
        )
    elif not dx_f and not dw_f and not all(data.get("same_bits", [True])):
        which = [
            name for name, same in zip(("dx", "dw"), data.get("same_bits", []), strict=False) if not same
        ]
        failures.append(
            Failure(
                case.name,
                "wrong-result",
                i18n.t("grader.repeat_differs", which=", ".join(which)),
                i18n.t("grader.repeat_differs_cause"),
            )
        )
    return failures
