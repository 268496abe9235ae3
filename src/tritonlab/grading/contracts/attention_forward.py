"""attention-forward (lesson 12): causal grouped-query attention, forward pass.

`attention_forward(q, k, v, sm_scale=None)` returns `(o, lse)` for q of shape (B, H_q, S, D) and k, v of shape
(B, H_kv, S, D), any strides, fp16 or bf16, D in {16, 32, 64, 128}, with H_q = g · H_kv:

    query head h reads K/V head h // g          (H_q not a multiple of H_kv: raise ValueError)
    s   = q @ kᵀ · sm_scale                     (sm_scale defaults to 1/sqrt(D)); s[i, j] = -inf for j > i
    lse = log Σ_{j ≤ i} exp(s[i, j])            fp32, shape (B, H_q, S), natural log
    o   = softmax(s) @ v                        q's dtype, shape (B, H_q, S, D)

Lesson 12 builds the non-causal kernel for H_q = H_kv and only describes what the causal mask, the causal loop
bound and the head mapping change; this contract grades them. Cases: groups g = 1, 4 and 8 (with H_kv = 1 and
H_kv = 2, so that a mapping h % H_kv differs from h // g), causal edges (S that no block divides, S = 1, S a
multiple of every block), D = 64 and 128, strided and transposed inputs, large scores, an explicit sm_scale,
bf16 (on a GPU: the interpreter computes raw bf16 arithmetic as NaN), and a head count that is not a multiple.
Shapes stay small on the interpreter, which runs each program in NumPy.

Cost model (per query head): reads q, o once and k, v once per group, S·D elements each, plus S fp32 for lse;
the S×S score matrix never leaves the chip. FLOPs: 2·S²·D (causal: about half of 4·S²·D).
Tolerance: o's own rounding, p rounded to the input dtype before the second tl.dot (relative u_in on every
weight), fp32 accumulation over S keys and D products, and the scores' absolute error (which multiplies every
weight by exp(δ)) — all scaled by Σ_j p_ij·|v_j|.
"""

from __future__ import annotations

import math

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import UNIT_ROUNDOFF, Case, Tensor, cached, random_values, result_error
from tritonlab.grading.contracts.compare import (
    add_hint,
    compare_values,
    exception_failure,
    host_checks,
    reads_outside,
)
from tritonlab.models import Failure

FUNCTION = "attention_forward"
ARG_NAMES = ["q", "k", "v"]
U32 = UNIT_ROUNDOFF["float32"]


def _case(
    rng: np.random.Generator,
    label: str,
    shape: tuple[int, int, int, int, int],
    dtype: str,
    *,
    layout: str = "contiguous",
    q_scale: float = 1.0,
    sm_scale: float | None = None,
    expect_error: str | None = None,
) -> Case:
    """shape = (B, H_q, H_kv, S, D)."""
    b, hq, hkv, s, d = shape
    q = Tensor(random_values(rng, (b, hq, s, d), dtype, q_scale), dtype, layout)
    k = Tensor(random_values(rng, (b, hkv, s, d), dtype), dtype, layout)
    v = Tensor(random_values(rng, (b, hkv, s, d), dtype), dtype, layout)
    kwargs: dict = {}
    if sm_scale is not None:
        kwargs["sm_scale"] = sm_scale
    group = f"g={hq // hkv}" if hq % hkv == 0 else "no whole group"
    name = (
        f"{label}B={b} Hq={hq} Hkv={hkv} ({group}) S={s} D={d} {dtype}"
        + ("" if layout == "contiguous" else f", {layout}")
        + ("" if sm_scale is None else f", sm_scale={sm_scale:g}")
    )
    extra = {"bf16_arithmetic": True} if dtype == "bfloat16" else {}
    return Case(name, (q, k, v), kwargs, expect_error=expect_error, extra=extra)


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    # Sized for the interpreter, which pays per program: most cases have one or two query blocks per head.
    g_rand = int(rng.choice([1, 4, 8]))
    hkv_rand = 1 if g_rand == 8 else int(rng.integers(1, 3))
    s_rand = int(rng.integers(20, 50))
    out = [
        _case(rng, "one query: ", (1, 4, 1, 1, 64), "float16"),
        _case(rng, "", (1, 2, 2, 37, 64), "float16"),
        _case(rng, "", (1, 4, 1, 45, 64), "float16"),
        _case(rng, "", (2, 4, 1, 17, 64), "float16"),
        _case(rng, "", (1, 16, 2, 13, 64), "float16"),
        _case(rng, "", (1, 4, 1, 50, 128), "float16"),
        _case(rng, "S a multiple of every block: ", (1, 1, 1, 128, 64), "float16"),
        _case(rng, "random shape: ", (1, g_rand * hkv_rand, hkv_rand, s_rand, 64), "float16"),
        _case(rng, "large scores: ", (1, 4, 1, 50, 64), "float16", q_scale=12.0),
        _case(rng, "strided: ", (1, 4, 2, 41, 64), "float16", layout="strided"),
        _case(rng, "all strides reversed: ", (2, 2, 1, 30, 64), "float16", layout="transposed"),
        _case(rng, "explicit scale: ", (1, 8, 1, 24, 64), "float16", sm_scale=0.3),
        _case(rng, "", (1, 4, 1, 70, 64), "bfloat16"),
        _case(rng, "heads not in whole groups: ", (1, 6, 4, 16, 64), "float16", expect_error="ValueError"),
    ]
    if backend == "gpu":
        out += [
            _case(rng, "large: ", (1, 16, 2, 1000, 128), "bfloat16"),
            _case(rng, "large: ", (2, 8, 2, 1000, 64), "float16"),
            _case(rng, "large: ", (4, 4, 4, 1024, 128), "bfloat16"),
        ]
    return out


def reference(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    scale: float,
    *,
    causal: bool = True,
    shift: int = 0,
    kv_map: str = "group",
) -> dict[str, np.ndarray]:
    """float64 attention. The keyword arguments model the usual mistakes, for the diagnosis: `causal=False`
    (no mask), `shift` (the diagonal moved: -1 hides it, +1 shows one key ahead), `kv_map="interleaved"` (query
    head h read K/V head h % H_kv instead of h // g)."""
    g = q.shape[1] // k.shape[1]
    if kv_map == "group":
        k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    else:
        k, v = np.tile(k, (1, g, 1, 1)), np.tile(v, (1, g, 1, 1))
    s = (q @ np.swapaxes(k, -1, -2)) * scale
    n_q, n_k = s.shape[2], s.shape[3]
    if causal:
        allowed = np.arange(n_k)[None, :] <= np.arange(n_q)[:, None] + shift
        s = np.where(allowed, s, -np.inf)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = np.max(s, axis=-1, keepdims=True)
        e = np.exp(s - m)
        denom = e.sum(axis=-1, keepdims=True)
        p = e / denom
        o = p @ v
        lse = (m + np.log(denom))[..., 0]
        pv = p @ np.abs(v)
        smax = np.max(np.where(np.isfinite(s), np.abs(s), 0.0), axis=-1)
    return {"o": o, "lse": lse, "pv": pv, "smax": smax}


def scale_of(case: Case) -> float:
    d = case.args[0].values.shape[3]
    return float(case.kwargs.get("sm_scale", 1.0 / math.sqrt(d)))


def tolerances(case: Case, ref: dict[str, np.ndarray]) -> dict[str, tuple]:
    q = case.args[0]
    d = q.values.shape[3]
    s_len = q.values.shape[2]
    u_in = UNIT_ROUNDOFF[q.dtype]
    score_err = U32 * (d + 8) * (1.0 + ref["smax"])  # absolute error of a score, per query row
    k = 4 * u_in + U32 * (16 + 2 * s_len + d) + 2 * score_err[..., None]
    return {
        "o": (2 * UNIT_ROUNDOFF[q.dtype], k * ref["pv"] + 1e-7),
        "lse": (4 * U32, 4 * score_err + U32 * (16 + 2 * np.log2(max(s_len, 2)))),
    }


def prepare(case: Case) -> tuple[dict, dict]:
    """The float64 reference and the tolerances of a case, once per case (grader.prepare_references makes them
    beside the next seed's cases, off the check's path)."""
    q, k, v = case.args
    ref = cached(case, "expected", lambda: reference(q.values, k.values, v.values, scale_of(case)))
    return ref, cached(case, "tolerances", lambda: tolerances(case, ref))


DIAGNOSE_ROWS = 192  # the hints are tried on the first queries of the first batch element only


def first_rows(
    q: np.ndarray, actual: np.ndarray, ref: dict, tol: dict
) -> tuple[np.ndarray, np.ndarray, dict, dict]:
    """The first batch element and its first DIAGNOSE_ROWS queries of the query-side arrays (keys stay whole):
    every mistake the diagnosis names (scale, causal mask, off-by-one, head mapping) shows in those rows, at a
    fraction of the float64 work (a large GPU case: ~10 references of 16 M scores took a minute)."""

    def cut(a: object) -> object:
        if not isinstance(a, np.ndarray) or a.ndim < 3:
            return a
        return a[:1, :, :DIAGNOSE_ROWS]

    limits = {key: tuple(cut(t) for t in pair) for key, pair in tol.items()}
    return cut(q), cut(actual), {key: cut(value) for key, value in ref.items()}, limits


def own_heads(case: Case, heads: int) -> tuple[np.ndarray, np.ndarray]:
    """What a kernel reads for k and v of the first batch element when query head h uses K/V head h: the
    inputs' storage read with their own strides for `heads` heads (NaN past the storage, as the guards are)."""
    from tritonlab.grading.contracts._layout import read_as, storage_image

    out = []
    for t in case.args[1:]:
        storage, strides, offset = storage_image(t)
        _, _, s, d = t.values.shape
        out.append(read_as(storage, (1, heads, s, d), strides, offset))
    return out[0], out[1]


def diagnosis(case: Case, result: dict, ref: dict, tol: dict) -> str:
    from tritonlab.grading.contracts._layout import actual_values

    q, k, v = (t.values for t in case.args)
    actual = actual_values(result, case.args[0].dtype)
    if actual is None or actual.shape != q.shape:
        return ""
    q, actual, ref, tol = first_rows(q, actual, ref, tol)
    k, v = k[:1], v[:1]
    scale = scale_of(case)
    rt, at = tol["o"]
    g = q.shape[1] // k.shape[1]

    def close(cand: dict) -> bool:
        o = cand["o"][:, :, : q.shape[2]]
        with np.errstate(invalid="ignore"):
            ok = np.abs(actual - o) <= 4 * at + 8 * rt * np.abs(o) + 2e-3 * np.abs(o)
        return bool(np.all(ok | (np.isnan(actual) & np.isnan(o))))

    d = q.shape[3]
    if close(reference(q, k, v, 1.0)):
        return i18n.t(
            "grader.attention_forward_scores_were_not_scaled", value_div=format(1 / math.sqrt(d), ".4g")
        )
    if close(reference(q, k, v, scale, causal=False)):
        return i18n.t("grader.attention_forward_causal_mask_missing_query")
    if g > 1 and k.shape[1] > 1 and close(reference(q, k, v, scale, kv_map="interleaved")):
        return i18n.t("grader.attention_forward_query_head_h_read", g=g)
    if g > 1 and close(reference(q, *own_heads(case, q.shape[1]), scale)):
        return i18n.t("grader.attention_forward_query_head_h_read_2", shape=k.shape[1], g=g)
    for shift in (-1, 1):
        if close(reference(q, k, v, scale, shift=shift)):
            side = (
                i18n.t("grader.attention_forward_excludes_diagonal")
                if shift < 0
                else i18n.t("grader.attention_forward_lets_each_query_see")
            )
            return i18n.t("grader.attention_forward_causal_mask_off_by", side=side)
    if np.any(np.isnan(actual)) and not np.any(np.isnan(ref["o"])):
        return i18n.t("grader.attention_forward_nan_output_some_rows")
    return ""


def lse_diagnosis(case: Case, result: dict, ref: dict, tol: dict, o_wrong: bool) -> str:
    from tritonlab.grading.contracts._layout import actual_values

    actual = actual_values(result, "float32", index=1)
    if actual is None or actual.shape != ref["lse"].shape:
        return ""
    q, k, v = (t.values for t in case.args)
    q, actual, ref, tol = first_rows(q, actual, ref, tol)
    k, v = k[:1], v[:1]
    rt, at = tol["lse"]

    def close(candidate: np.ndarray) -> bool:
        candidate = candidate[:, :, : q.shape[2]]
        with np.errstate(invalid="ignore"):
            return bool(np.all(np.abs(actual - candidate) <= 4 * at + 8 * rt * np.abs(candidate) + 1e-4))

    if close(reference(q, k, v, 1.0)["lse"]):
        return i18n.t(
            "grader.attention_forward_lse_matches_unscaled_scores", scale_of=format(scale_of(case), ".4g")
        )
    if close(ref["lse"] / np.log(2.0)):
        return i18n.t("grader.attention_forward_lse_log2_units_multiply")
    if close(reference(q, k, v, scale_of(case), causal=False)["lse"]):
        return i18n.t("grader.attention_forward_lse_sums_over_every")
    if o_wrong:
        return ""
    return i18n.t("grader.attention_forward_o_right_but_lse")


def check(case: Case, result: dict) -> list[Failure]:
    exc = exception_failure(case, result)
    if exc is not None:
        return [exc]
    fn = result.get("function", FUNCTION)
    if case.expect_error:
        if result_error(result) is not None:
            return []  # raised what was expected
        q, k, _ = (t.values.shape for t in case.args)
        return [
            Failure(
                case.name,
                "missing-validation",
                i18n.t(
                    "grader.attention_forward_fn_returned_for_q",
                    fn=fn,
                    q=q[1],
                    k=k[1],
                    expect_error=case.expect_error,
                ),
                i18n.t("grader.attention_forward_check_host_that_h", expect_error=case.expect_error),
            )
        ]
    outputs = result.get("outputs", [])
    if result.get("returned") not in ("tuple", "list") or len(outputs) != 2:
        return [
            Failure(
                case.name,
                "wrong-result",
                i18n.t(
                    "grader.attention_forward_fn_returned_returned_with",
                    fn=fn,
                    returned=result.get("returned"),
                    n_outputs=len(outputs),
                ),
                i18n.t("grader.attention_forward_return_o_lse_lse"),
            )
        ]
    q = case.args[0]
    ref, tol = prepare(case)
    failures = host_checks(case, result, allow_copies=False, needs_launch=True)
    o_f = compare_values(
        case, result, ref["o"], q.dtype, *tol["o"], output_index=0, label="o", nan_is_oob_read=False
    )
    lse_f = compare_values(case, result, ref["lse"], "float32", *tol["lse"], output_index=1, label="lse")
    o_f = add_hint(o_f, lambda: diagnosis(case, result, ref, tol))
    if lse_f:
        lse_f = add_hint(lse_f, lambda: lse_diagnosis(case, result, ref, tol, bool(o_f)))
    if o_f or lse_f:  # a load that read off k or v (a head past H_kv, keys past S) explains wrong values
        failures += reads_outside(case, result, reached=True)
    return failures + o_f + lse_f
