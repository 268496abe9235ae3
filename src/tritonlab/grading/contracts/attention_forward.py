"""attention-forward (lesson 12): `attention_forward(q, k, v, causal=False, sm_scale=None)` returns `(o, lse)`
for q, k, v of shape (B, H, S, D) (any strides, fp16 or bf16, D in {16, 32, 64, 128}):

    s   = q @ kᵀ · sm_scale            (sm_scale defaults to 1/sqrt(D); causal: s[i, j] = -inf for j > i)
    lse = log Σ_j exp(s[i, j])         fp32, shape (B, H, S), natural log
    o   = softmax(s) @ v               q's dtype, shape (B, H, S, D)

Cases: sequence lengths that are not multiples of any block (the tail keys must be masked to -inf, the tail
queries must not be stored), one query, causal and not, D = 64 and 128, strided and transposed inputs,
large scores (the running max must be subtracted), an explicit sm_scale. Shapes stay small: the interpreter
runs each program in NumPy.

Cost model (per (batch, head)): reads q, k, v and writes o once, S·D elements each, plus S fp32 for lse; the
S×S score matrix never leaves the chip. FLOPs: 4·S²·D (2·S²·D causal, about half).
Tolerance: o's own rounding, p rounded to the input dtype before the second tl.dot (relative u_in on every
weight), fp32 accumulation over S keys and D products, and the scores' absolute error (which multiplies
every weight by exp(δ)) — all scaled by Σ_j p_ij·|v_j|.
"""

from __future__ import annotations

import math

import numpy as np

from tritonlab.grading.contracts import UNIT_ROUNDOFF, Case, Tensor, cached, random_values
from tritonlab.grading.contracts.compare import add_hint, compare_values, exception_failure, host_checks
from tritonlab.models import Failure

FUNCTION = "attention_forward"
ARG_NAMES = ["q", "k", "v"]
U32 = UNIT_ROUNDOFF["float32"]


def _case(
    rng: np.random.Generator,
    label: str,
    shape: tuple[int, int, int, int],
    dtype: str,
    causal: bool,
    *,
    layout: str = "contiguous",
    q_scale: float = 1.0,
    sm_scale: float | None = None,
) -> Case:
    q = Tensor(random_values(rng, shape, dtype, q_scale), dtype, layout)
    k = Tensor(random_values(rng, shape, dtype), dtype, layout)
    v = Tensor(random_values(rng, shape, dtype), dtype, layout)
    kwargs: dict = {"causal": causal}
    if sm_scale is not None:
        kwargs["sm_scale"] = sm_scale
    b, h, s, d = shape
    name = (
        f"{label}B={b} H={h} S={s} D={d} {dtype} {'causal' if causal else 'non-causal'}"
        + ("" if layout == "contiguous" else f", {layout}")
        + ("" if sm_scale is None else f", sm_scale={sm_scale:g}")
    )
    extra = {"bf16_arithmetic": True} if dtype == "bfloat16" else {}
    return Case(name, (q, k, v), kwargs, extra=extra)


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    s_rand = int(rng.integers(40, 120))
    out = [
        _case(rng, "one query: ", (1, 1, 1, 64), "float16", False),
        _case(rng, "", (1, 2, 37, 64), "float16", False),
        _case(rng, "", (1, 2, 37, 64), "float16", True),
        _case(rng, "", (2, 1, 64, 64), "float16", True),
        _case(rng, "", (1, 1, 100, 128), "float16", False),
        _case(rng, "", (1, 1, 97, 128), "float16", True),
        _case(rng, "random length: ", (1, 2, s_rand, 64), "float16", bool(rng.integers(0, 2))),
        _case(rng, "large scores: ", (1, 1, 50, 64), "float16", False, q_scale=12.0),
        _case(rng, "strided: ", (1, 2, 45, 64), "float16", True, layout="strided"),
        _case(rng, "all strides reversed: ", (2, 2, 30, 64), "float16", False, layout="transposed"),
        _case(rng, "explicit scale: ", (1, 1, 40, 64), "float16", True, sm_scale=0.3),
        _case(rng, "", (1, 2, 70, 64), "bfloat16", True),
    ]
    if backend == "gpu":
        out += [
            _case(rng, "large: ", (2, 8, 1000, 64), "float16", True),
            _case(rng, "large: ", (1, 4, 2049, 128), "bfloat16", False),
            _case(rng, "large: ", (4, 4, 1024, 128), "bfloat16", True),
        ]
    return out


def reference(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    causal: bool,
    scale: float,
    shift: int = 0,
    mask_tail: int = 0,
) -> dict[str, np.ndarray]:
    """float64 attention; `shift` moves the causal diagonal (a wrong offset), `mask_tail` pads the keys with
    that many zero keys that are NOT masked (a missing tail mask), for the diagnosis."""
    if mask_tail:
        pad = np.zeros(k.shape[:2] + (mask_tail, k.shape[3]))
        k = np.concatenate([k, pad], axis=2)
        v = np.concatenate([v, pad], axis=2)
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    n_q, n_k = s.shape[2], s.shape[3]
    if causal:
        allowed = np.arange(n_k)[None, :] <= np.arange(n_q)[:, None] + shift
        s = np.where(allowed, s, -np.inf)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = np.max(s, axis=-1, keepdims=True)
        e = np.exp(s - m)
        denom = e.sum(axis=-1, keepdims=True)
        p = e / denom
        o = np.einsum("bhij,bhjd->bhid", p, v)
        lse = (m + np.log(denom))[..., 0]
        pv = np.einsum("bhij,bhjd->bhid", p, np.abs(v))
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
    ref = cached(
        case,
        "expected",
        lambda: reference(q.values, k.values, v.values, bool(case.kwargs.get("causal")), scale_of(case)),
    )
    return ref, cached(case, "tolerances", lambda: tolerances(case, ref))


DIAGNOSE_ELEMENTS = 1 << 16  # past this many elements of q, the hints are tried on one (batch, head) slice


def one_head(arrays: list, ref: dict, tol: dict) -> tuple[list, dict, dict]:
    """The first (batch, head) of a case's arrays, reference and tolerances: every mistake the diagnosis
    names (scale, causal mask, off-by-one, unmasked tail) shows in each head, so one tells which, at a
    fraction of the float64 work (a large GPU case: ~10 references of 16 M scores took a minute)."""
    cut = [None if a is None else a[:1, :1] for a in arrays]
    part = {key: value[:1, :1] for key, value in ref.items()}
    limits = {
        key: tuple(t[:1, :1] if isinstance(t, np.ndarray) and t.ndim >= 2 else t for t in pair)
        for key, pair in tol.items()
    }
    return cut, part, limits


def diagnosis(case: Case, result: dict, ref: dict, tol: dict) -> str:
    from tritonlab.grading.contracts._layout import actual_values

    q, k, v = (t.values for t in case.args)
    actual = actual_values(result, case.args[0].dtype)
    if actual is None or actual.shape != q.shape:
        return ""
    if q.size > DIAGNOSE_ELEMENTS:
        (q, k, v, actual), ref, tol = one_head([q, k, v, actual], ref, tol)
    causal = bool(case.kwargs.get("causal"))
    scale = scale_of(case)
    rt, at = tol["o"]

    def close(cand: dict) -> bool:
        with np.errstate(invalid="ignore"):
            ok = np.abs(actual - cand["o"]) <= 4 * at + 8 * rt * np.abs(cand["o"]) + 2e-3 * np.abs(cand["o"])
        return bool(np.all(ok | (np.isnan(actual) & np.isnan(cand["o"]))))

    d = q.shape[3]
    if close(reference(q, k, v, causal, 1.0)):
        return f"the scores were not scaled: multiply q·kᵀ by sm_scale = 1/sqrt(D) = {1 / math.sqrt(d):.4g}"
    if causal and close(reference(q, k, v, False, scale)):
        return "the causal mask is missing: query i may only see keys j ≤ i"
    if not causal and close(reference(q, k, v, True, scale)):
        return "a causal mask was applied to a non-causal call: mask only when causal=True"
    if causal:
        for shift in (-1, 1):
            if close(reference(q, k, v, True, scale, shift=shift)):
                side = "excludes the diagonal" if shift < 0 else "lets each query see one key ahead"
                return f"the causal mask is off by one: it {side}; keep keys with offs_n <= offs_m"
    s_len = q.shape[2]
    for block in (16, 32, 64, 128, 256):
        tail = -(-s_len // block) * block - s_len
        if tail and close(reference(q, k, v, causal, scale, mask_tail=tail)):
            return (
                f"the padded keys past S count in the softmax (as {tail} keys with score 0): set the scores of "
                "keys ≥ S to -inf with tl.where before the row max and exp"
            )
    if np.any(np.isnan(actual)) and not np.any(np.isnan(ref["o"])):
        return (
            "NaN in the output: a row whose first key block is fully masked computes exp(-inf − (-inf)); make "
            "sure every processed block contains at least one visible key (causal: loop up to the end of the "
            "query block, not its start), or guard the rescale"
        )
    return ""


def lse_diagnosis(case: Case, result: dict, ref: dict, tol: dict, o_wrong: bool) -> str:
    from tritonlab.grading.contracts._layout import actual_values

    actual = actual_values(result, "float32", index=1)
    if actual is None or actual.shape != ref["lse"].shape:
        return ""
    q, k, v = (t.values for t in case.args)
    if q.size > DIAGNOSE_ELEMENTS:
        (q, k, v, actual), ref, tol = one_head([q, k, v, actual], ref, tol)
    rt, at = tol["lse"]

    def close(candidate: np.ndarray) -> bool:
        with np.errstate(invalid="ignore"):
            return bool(np.all(np.abs(actual - candidate) <= 4 * at + 8 * rt * np.abs(candidate) + 1e-4))

    causal = bool(case.kwargs.get("causal"))
    if close(reference(q, k, v, causal, 1.0)["lse"]):
        return f"lse matches unscaled scores: multiply q·kᵀ by sm_scale = {scale_of(case):.4g} before the softmax"
    if close(ref["lse"] / np.log(2.0)):
        return "lse is in log2 units: multiply (m₂ + log2(l)) by ln 2 to store the natural-log log-sum-exp"
    if o_wrong:
        return ""
    return (
        "o is right but lse is not: lse = m + log(l), the row max plus the log of the row sum, in natural log"
    )


def check(case: Case, result: dict) -> list[Failure]:
    q, k, v = case.args
    exc = exception_failure(case, result)
    if exc is not None:
        return [exc]
    fn = result.get("function", FUNCTION)
    outputs = result.get("outputs", [])
    if result.get("returned") not in ("tuple", "list") or len(outputs) != 2:
        return [
            Failure(
                case.name,
                "wrong-result",
                f"{fn} returned {result.get('returned')} with {len(outputs)} tensor(s); expected a pair (o, lse)",
                "return o, lse — lse is the fp32 log-sum-exp of each query's scores, kept for the backward pass",
            )
        ]
    ref, tol = prepare(case)
    failures = host_checks(case, result, allow_copies=False, needs_launch=True)
    o_f = compare_values(
        case, result, ref["o"], q.dtype, *tol["o"], output_index=0, label="o", nan_is_oob_read=False
    )
    lse_f = compare_values(case, result, ref["lse"], "float32", *tol["lse"], output_index=1, label="lse")
    o_f = add_hint(o_f, lambda: diagnosis(case, result, ref, tol))
    if lse_f:
        lse_f = add_hint(lse_f, lambda: lse_diagnosis(case, result, ref, tol, bool(o_f)))
    return failures + o_f + lse_f


def traffic_bytes(b: int, h: int, s: int, d: int, elem: int, flash: bool) -> int:
    """HBM bytes of the forward pass: flash reads q, k, v and writes o (+ fp32 lse); the unfused version also
    writes the S×S scores, reads them for the softmax, writes P and reads it for P @ V."""
    qkvo = 4 * b * h * s * d * elem
    if flash:
        return qkvo + 4 * b * h * s
    return qkvo + 4 * b * h * s * s * elem
