"""attention-backward (lesson 13): `attention_backward(q, k, v, o, lse, do, sm_scale=None)` returns
`(dq, dk, dv)`, the gradients of CAUSAL attention for q, k, v, o, do of shape (B, H, S, D) (any strides, fp16
or bf16, D in {16, 32, 64, 128}) and the forward's lse (fp32, (B, H, S), natural log):

    s  = q @ kᵀ · sm_scale, s[i, j] = -inf for j > i        (sm_scale defaults to 1/sqrt(D))
    p  = exp(s − lse)                                        the forward's probabilities, rebuilt
    dv = pᵀ @ do,   dp = do @ vᵀ,   Δ_i = Σ_d do[i, d]·o[i, d],   ds = p ⊙ (dp − Δ)
    dq = ds @ k · sm_scale,   dk = dsᵀ @ q · sm_scale        all three in q's dtype, shape (B, H, S, D)

The parent makes q, k, v and do, computes o (rounded to the input dtype) and lse (rounded to fp32) in float64,
and judges the three gradients against float64 ones of the exact function. Lesson 13 teaches the non-causal
backward; this contract grades the causal one (the lesson's kernels fail it: tests/test_lesson_code_fails.py).

Cost model (per (batch, head)): reads q, k, v, o, do once and k, v (dQ pass) and q, do (dK/dV pass) once per
block of the other side, writes dq, dk, dv; S·D elements each, plus S fp32 for lse and Δ. FLOPs of the
non-causal backward: 2 (recompute s) + 2 (dv) + 2 (dp) + 2 (dk) + 2 (dq) = 10·S²·D, counting the score
recomputation of both passes once (the dQ pass recomputes s and dp again: 14·S²·D as executed); causal, half.
Tolerance: the outputs' own rounding, plus p and ds rounded to the input dtype before their tl.dot (relative
u_in each), Δ from the rounded o (u_in·Σ|do·o|), fp32 accumulation over S keys and D products, and the score
and lse errors (which multiply every p by exp(δ)) — each scaled by the sum of the magnitudes it multiplies.
"""

from __future__ import annotations

import math

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import TINY, UNIT_ROUNDOFF, Case, Tensor, cached, quantize, random_values
from tritonlab.grading.contracts.compare import add_hint, compare_values, exception_failure, host_checks
from tritonlab.models import Failure

FUNCTION = "attention_backward"
ARG_NAMES = ["q", "k", "v", "o", "lse", "do"]
U32 = UNIT_ROUNDOFF["float32"]
OUTPUTS = ("dq", "dk", "dv")


# The contractions as batched matrix products: np.matmul hands each (batch, head) slice to BLAS, where np.einsum
# without a path loops in C (the GPU cases' references took 24 core-seconds of the server's CPU a check).
def rows_by_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ "bhid,bhjd->bhij": every row of `a` against every row of `b` (q·kᵀ, do·vᵀ)."""
    return a @ np.swapaxes(b, -1, -2)


def columns_by_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ "bhij,bhid->bhjd": aᵀ·b (dsᵀ·q, pᵀ·do)."""
    return np.swapaxes(a, -1, -2) @ b


def forward(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """float64 causal attention: (o, lse)."""
    s = causal_scores(q, k, scale)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - m)
    denom = e.sum(axis=-1, keepdims=True)
    return (e / denom) @ v, (m + np.log(denom))[..., 0]


def causal_scores(q: np.ndarray, k: np.ndarray, scale: float) -> np.ndarray:
    """q·kᵀ·scale with -inf where the key comes after the query."""
    s = rows_by_rows(q, k) * scale
    n = s.shape[-1]
    return np.where(np.arange(n)[None, :] <= np.arange(n)[:, None], s, -np.inf)


def _case(
    rng: np.random.Generator,
    label: str,
    shape: tuple[int, int, int, int],
    dtype: str,
    *,
    layout: str = "contiguous",
    q_scale: float = 1.0,
    sm_scale: float | None = None,
) -> Case:
    q = random_values(rng, shape, dtype, q_scale)
    k = random_values(rng, shape, dtype)
    v = random_values(rng, shape, dtype)
    do = random_values(rng, shape, dtype)
    scale = 1.0 / math.sqrt(shape[3]) if sm_scale is None else sm_scale
    o, lse = forward(q, k, v, scale)
    args = (
        Tensor(q, dtype, layout),
        Tensor(k, dtype, layout),
        Tensor(v, dtype, layout),
        Tensor(quantize(o, dtype), dtype),
        Tensor(quantize(lse, "float32"), "float32"),
        Tensor(do, dtype, layout),
    )
    b, h, s, d = shape
    name = (
        f"{label}B={b} H={h} S={s} D={d} {dtype}"
        + ("" if layout == "contiguous" else f", {layout}")
        + ("" if sm_scale is None else f", sm_scale={sm_scale:g}")
    )
    kwargs = {} if sm_scale is None else {"sm_scale": sm_scale}
    extra = {"bf16_arithmetic": True} if dtype == "bfloat16" else {}
    return Case(name, args, kwargs, extra=extra)


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    s_rand = int(rng.integers(20, 80))
    out = [
        _case(rng, "one query: ", (1, 1, 1, 64), "float16"),
        _case(rng, "", (1, 2, 37, 64), "float16"),
        _case(rng, "", (2, 1, 64, 64), "float16"),
        _case(rng, "", (1, 1, 45, 128), "float16"),
        _case(rng, "random length: ", (1, 1, s_rand, 64), "float16"),
        _case(rng, "large scores: ", (1, 1, 40, 64), "float16", q_scale=12.0),
        _case(rng, "strided: ", (1, 2, 33, 64), "float16", layout="strided"),
        _case(rng, "all strides reversed: ", (2, 1, 30, 64), "float16", layout="transposed"),
        _case(rng, "explicit scale: ", (1, 1, 50, 64), "float16", sm_scale=0.3),
        _case(rng, "", (1, 2, 70, 64), "bfloat16"),
    ]
    if backend == "gpu":
        out += [
            _case(rng, "large: ", (2, 8, 1000, 64), "float16"),
            _case(rng, "large: ", (1, 4, 2049, 128), "bfloat16"),
            _case(rng, "large: ", (4, 4, 1024, 128), "bfloat16"),
        ]
    return out


def scale_of(case: Case) -> float:
    return float(case.kwargs.get("sm_scale", 1.0 / math.sqrt(case.args[0].values.shape[3])))


def gradients(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, do: np.ndarray, scale: float
) -> dict[str, np.ndarray]:
    """float64 gradients of causal attention (and p and s, which the tolerances need)."""
    s = causal_scores(q, k, scale)
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return backward_from(p, s, q, k, v, p @ v, do, scale)


def backward_from(
    p: np.ndarray,
    s: np.ndarray,
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    o: np.ndarray,
    do: np.ndarray,
    scale: float,
    with_delta: bool = True,
) -> dict[str, np.ndarray]:
    dp = rows_by_rows(do, v)
    delta = np.sum(do * o, axis=-1, keepdims=True) if with_delta else 0.0
    ds = p * (dp - delta)
    return {
        "dq": (ds @ k) * scale,
        "dk": columns_by_rows(ds, q) * scale,
        "dv": columns_by_rows(p, do),
        "p": p,
        "s": s,
    }


def as_a_kernel_would(
    arrays: list[np.ndarray],
    scale: float,
    *,
    visible: np.ndarray,
    with_delta: bool = True,
) -> dict[str, np.ndarray]:
    """What a kernel computes when it rebuilds p = exp(s − lse) from the GIVEN lse and o, with `visible` (an
    S×S boolean) as its mask: the usual mistakes (no causal mask, a mask one key off, a loop that skips the
    diagonal block, no Δ) for the diagnosis."""
    q, k, v, o, lse, do = arrays
    s = rows_by_rows(q, k) * scale
    with np.errstate(over="ignore"):
        p = np.where(visible, np.exp(np.minimum(s - lse[..., None], 80.0)), 0.0)
    return backward_from(p, s, q, k, v, o, do, scale, with_delta)


def magnitudes(case: Case, g: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Sums of absolute values each gradient's rounding errors scale with: dv ~ pᵀ|do|; dq, dk ~
    scale · (p ⊙ (Σ|do||v| + Σ|do||o|)) @ |k| (resp. ᵀ @ |q|)."""
    q, k, v, o, _lse, do = (t.values for t in case.args)
    p = g["p"]
    b_abs = rows_by_rows(np.abs(do), np.abs(v))
    a_abs = np.sum(np.abs(do) * np.abs(o), axis=-1, keepdims=True)
    weight = p * (b_abs + a_abs)
    scale = scale_of(case)
    return {
        "dq": (weight @ np.abs(k)) * scale,
        "dk": columns_by_rows(weight, np.abs(q)) * scale,
        "dv": columns_by_rows(p, np.abs(do)),
    }


def tolerances(case: Case, g: dict[str, np.ndarray]) -> dict[str, tuple]:
    q, _k, _v, _o, lse, _do = case.args
    dtype = q.dtype
    _b, _h, s_len, d = q.values.shape
    u_in = UNIT_ROUNDOFF[dtype]
    s = g["s"]
    smax = np.max(np.where(np.isfinite(s), np.abs(s), 0.0), axis=(-1, -2))
    lmax = np.max(np.abs(lse.values), axis=-1)
    # absolute error of a score and of lse, per head (exp(δ) multiplies every p by 1 + δ)
    score_err = U32 * (d + 8) * (1.0 + smax) + 4 * U32 * (1.0 + lmax)
    k_rel = 6 * u_in + U32 * (16 + 2 * s_len + d) + 2 * score_err[..., None, None]
    mags = magnitudes(case, g)
    tiny = 4 * TINY[dtype]
    return {
        name: (2 * u_in, k_rel * mags[name] + tiny + 2 * TINY[dtype] * s_len * (mags[name] > 0))
        for name in OUTPUTS
    }


def prepare(case: Case) -> tuple[dict, dict]:
    """The float64 gradients and their tolerances, once per case (made beside the next seed's cases)."""
    q, k, v, _o, _lse, do = (t.values for t in case.args)
    g = cached(case, "expected", lambda: gradients(q, k, v, do, scale_of(case)))
    tol = cached(case, "tolerances", lambda: tolerances(case, g))
    # p and s, (B, H, S, S) float64 each, serve the tolerances alone: dropped once those are made, or the case
    # cache keeps them with the case (a GPU seed held 1111 MiB after prepare with them, 2048 MiB the budget)
    g.pop("p", None)
    g.pop("s", None)
    return g, tol


DIAGNOSE_ELEMENTS = 1 << 16  # past this many elements of q, the hints are tried on one (batch, head) slice


def diagnosis(case: Case, result: dict, index: int, tol: dict) -> str:
    """Which usual mistake reproduces the learner's gradient `OUTPUTS[index]` (within a loose tolerance)."""
    from tritonlab.grading.contracts._layout import actual_values

    name = OUTPUTS[index]
    arrays = [t.values for t in case.args]
    actual = actual_values(result, case.args[0].dtype, index=index)
    if actual is None or actual.shape != arrays[0].shape:
        return ""
    rt, at = tol[name]
    if arrays[0].size > DIAGNOSE_ELEMENTS:
        arrays, actual, at = [a[:1, :1] for a in arrays], actual[:1, :1], at[:1, :1]
    scale = scale_of(case)
    n = arrays[0].shape[2]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]

    def close(candidate: np.ndarray) -> bool:
        slack = 4 * at + 8 * rt * np.abs(candidate) + 2e-3 * np.max(np.abs(candidate), initial=0.0)
        return bool(np.all(np.abs(actual - candidate) <= slack))

    def variant(visible: np.ndarray, with_delta: bool = True) -> np.ndarray:
        return as_a_kernel_would(arrays, scale, visible=visible, with_delta=with_delta)[name]

    if close(variant(np.ones((n, n), dtype=bool))):
        return i18n.t("grader.attention_backward_name_what_non_causal", name=name)
    for shift, side in (
        (-1, i18n.t("grader.attention_backward_hides_diagonal")),
        (1, i18n.t("grader.attention_backward_lets_each_query_see")),
    ):
        if close(variant(j <= i + shift)):
            return i18n.t("grader.attention_backward_causal_mask_off_by", side=side)
    for block in (16, 32, 64, 128):
        if n > 1 and close(variant((j <= i) & (j < (i // block) * block))):
            return i18n.t("grader.attention_backward_name_misses_diagonal_block", name=name, block=block)
    if name != "dv" and close(variant(j <= i, with_delta=False)):
        return i18n.t("grader.attention_backward_ds_misses_term_softmax")
    exact = variant(j <= i)
    if name != "dv" and close(exact / scale):
        return i18n.t("grader.attention_backward_name_lacks_factor_sm", name=name, scale=format(scale, ".4g"))
    if name != "dv" and close(exact * scale):
        return i18n.t("grader.attention_backward_name_has_sm_scale", name=name, scale=format(scale, ".4g"))
    return ""


def check(case: Case, result: dict) -> list[Failure]:
    exc = exception_failure(case, result)
    if exc is not None:
        return [exc]
    fn = result.get("function", FUNCTION)
    outputs = result.get("outputs", [])
    if result.get("returned") not in ("tuple", "list") or len(outputs) != 3:
        return [
            Failure(
                case.name,
                "wrong-result",
                i18n.t(
                    "grader.attention_backward_fn_returned_returned_with",
                    fn=fn,
                    returned=result.get("returned"),
                    n_outputs=len(outputs),
                ),
                i18n.t("grader.attention_backward_return_dq_dk_dv"),
            )
        ]
    g, tol = prepare(case)
    dtype = case.args[0].dtype
    failures = host_checks(case, result, allow_copies=False, needs_launch=True)
    for index, name in enumerate(OUTPUTS):
        found = compare_values(case, result, g[name], dtype, *tol[name], output_index=index, label=name)
        failures += add_hint(found, lambda index=index: diagnosis(case, result, index, tol))
    return failures


def memory_bytes(b: int, h: int, s: int, d: int, elem: int, fused: bool) -> int:
    """Bytes the backward keeps live beyond its inputs and gradients: the fused kernels keep lse and Δ (fp32,
    S per head); an unfused (eager) backward keeps the S×S probabilities from the forward and makes dP and dS,
    S×S each, in the input dtype."""
    if fused:
        return 2 * 4 * b * h * s
    return 3 * b * h * s * s * elem
