"""matmul-bias (lesson 9): `matmul_bias(a, b, bias, activation=None)` returns act(a @ b + bias) computed in ONE
kernel launch (the epilogue fused); activation None, "relu" or "gelu" (erf form, as torch.nn.functional.gelu).

Cost model: 2·M·N·K FLOPs; bytes (M·K + K·N + N + M·N)·s — the fused epilogue saves a full M·N read and write.
Tolerance: the matmul bound of _matmul.py for z = a @ b + bias, carried through the activation (|gelu'| ≤ 1.13)
plus a few fp32 ulps of erf; a tanh-approximated GELU (off by up to 4.7e-4) fails in fp32.
"""

from __future__ import annotations

import math

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import UNIT_ROUNDOFF, Case, Tensor, cached, quantize, random_values
from tritonlab.grading.contracts import _matmul as mm
from tritonlab.grading.contracts._layout import explain_layout
from tritonlab.grading.contracts.compare import add_hint, judge
from tritonlab.models import Failure

FUNCTION = "matmul_bias"
ARG_NAMES = ["a", "b", "bias"]
ACTIVATIONS = (None, "relu", "gelu")
_ERF = np.vectorize(math.erf, otypes=[np.float64])
U32 = UNIT_ROUNDOFF["float32"]


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    out = []
    plan = mm.shape_plan(rng, backend, small=True)
    for i, shape in enumerate(plan):
        a, b = mm.operands(rng, shape)
        bias = Tensor(random_values(rng, (shape[1],), shape[5]), shape[5])
        for act in ACTIVATIONS if i % 2 == 0 else ACTIVATIONS[::-1][:2]:
            out.append(
                Case(
                    f"{mm.name_of(shape)}, activation={act!r}",
                    (a, b, bias),
                    {"activation": act},
                    extra=mm.extra_for(shape[5]) | {"backend": backend},
                )
            )
    # GELU in its erf form: pre-activations spread over [-4, 4], short K so the bound stays tiny.
    for m, n, k in ((37, 29, 16), (64, 48, 24)):
        shape = (m, n, k, "contiguous", "contiguous", "float32", "gelu erf form: ")
        a, b = mm.operands(rng, shape, scale=0.45)
        # values on the fp16 grid are exact in tf32: the GPU's default tf32 dot then adds no error
        a, b = (Tensor(quantize(t.values, "float16"), "float32", t.layout) for t in (a, b))
        bias = Tensor(random_values(rng, (n,), "float32", 1.5), "float32")
        out.append(
            Case(
                f"{mm.name_of(shape)}, activation='gelu'",
                (a, b, bias),
                {"activation": "gelu"},
                extra={"backend": backend},
            )
        )
    # A wide output (N ≫ M) in fp16: a bias indexed by rows reads past its end.
    shape = (19, 83, 40, "contiguous", "transposed", "float16", "")
    a, b = mm.operands(rng, shape)
    out.append(
        Case(
            f"{mm.name_of(shape)}, activation='relu'",
            (a, b, Tensor(random_values(rng, (83,), "float16"), "float16")),
            {"activation": "relu"},
            extra={"backend": backend},
        )
    )
    # a strided bias (every second element of a larger buffer): the kernel must use bias.stride(0)
    shape = (23, 37, 24, "contiguous", "contiguous", "float32", "")
    a, b = mm.operands(rng, shape)
    out.append(
        Case(
            f"{mm.name_of(shape)}, bias strided (stride 2), activation=None",
            (a, b, Tensor(random_values(rng, (37,), "float32"), "float32", "strided")),
            {"activation": None},
            extra={"backend": backend},
        )
    )
    return out


def gelu(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1.0 + _ERF(z / math.sqrt(2.0)))


def gelu_tanh(z: np.ndarray) -> np.ndarray:
    return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))


def apply(act: str | None, z: np.ndarray) -> np.ndarray:
    if act == "relu":
        return np.maximum(z, 0.0)
    if act == "gelu":
        return gelu(z)
    return z


def diagnosis(
    act: str | None,
    z: np.ndarray,
    actual: np.ndarray | None,
    atol: np.ndarray,
    rtol: float,
    a: Tensor,
    b: Tensor,
    bias: np.ndarray,
) -> str:
    if actual is None or actual.shape != z.shape:
        return ""

    def close(candidate: np.ndarray) -> bool:
        return bool(np.all(np.abs(actual - candidate) <= atol + rtol * np.abs(candidate)))

    others = {
        "relu": np.maximum(z, 0.0),
        "gelu (tanh approximation)": gelu_tanh(z),
        "gelu": gelu(z),
        "no activation": z,
    }
    for name, candidate in others.items():
        if name != (act or "no activation") and close(candidate):
            want = {
                "gelu": i18n.t("grader.matmul_bias_erf_form_0_5"),
                "relu": "max(z, 0)",
                None: i18n.t("grader.matmul_bias_no_activation_z_itself"),
            }[act]
            return i18n.t("grader.matmul_bias_output_matches_name_but", name=name, act=repr(act), want=want)
    z_row_bias = a.values @ b.values
    rows, cols = z.shape
    r = min(rows, cols)
    if rows != cols and r > 1:
        candidate = apply(act, z_row_bias[:r] + bias[:r, None])
        if np.all(np.abs(actual[:r] - candidate) <= atol[:r] + rtol * np.abs(candidate)):
            return i18n.t("grader.matmul_bias_bias_was_added_along")
    return mm.one_tile_hint(a, b, actual, atol, lambda c: apply(act, c + bias[None, :]))


def prepare(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """The float64 product and its error bound, once per case (made ahead with the next seed's cases)."""
    a, b, _bias = case.args
    backend = case.extra.get("backend", "interpreter")
    dot = cached(case, "dot", lambda: a.values @ b.values)
    return dot, cached(case, f"bound-{backend}", lambda: mm.dot_bound(a, b, backend))


def check(case: Case, result: dict) -> list[Failure]:
    a, b, bias = case.args
    act = case.kwargs.get("activation")
    dot, bound = prepare(case)
    z = dot + bias.values[None, :]
    expected = apply(act, z)
    u_out = UNIT_ROUNDOFF[a.dtype]
    tol_z = bound + 2 * U32 * np.abs(z) + 2 * u_out * (np.abs(dot) + np.abs(bias.values[None, :]))
    if act == "gelu":
        tol = 1.13 * tol_z + 8 * U32 * (np.abs(z) + 1.0)
    else:
        tol = tol_z
    rtol = 2 * u_out
    failures = judge(case, result, expected, a.dtype, rtol, tol, max_launches=1, nan_is_oob_read=True)
    return add_hint(
        failures,
        lambda: (
            mm.k_mask_hint(mm.actual(result, a.dtype), a.values.shape[1])
            or diagnosis(act, z, mm.actual(result, a.dtype), tol, rtol, a, b, bias.values)
            or explain_layout(
                case,
                result,
                a.dtype,
                lambda v: apply(act, v[0] @ v[1] + v[2][None, :]),
                rtol,
                2 * tol,
                ARG_NAMES,
            )
        ),
    )
