"""Contracts in the parent alone (numpy only, no child): case plans, references, tolerances, diagnoses.

Fake child results are built here, so these tests say exactly which outputs a contract accepts.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tritonlab.grading import contracts
from tritonlab.grading.contracts import Case, Tensor, layout_geometry, quantize
from tritonlab.grading.contracts._layout import read_as, storage_image
from tritonlab.grading.contracts._values import unwritten_cause_2d

EXERCISES = [
    "vector-copy",
    "pid-map",
    "vector-add",
    "bench-protocol",
    "copy-2d",
    "transpose",
    "add-bias",
    "softmax",
    "matmul",
    "matmul-bias",
    "autotune",
    "debug-rmsnorm",
    "debug-persistent",
    "rmsnorm-backward",
    "autograd-wrap",
    "attention-forward",
    "attention-backward",
    "dropout",
    "cumsum",
]


def result_with(values: np.ndarray, dtype: str = "float32", launches: int = 1) -> dict:
    """A child's result for one returned tensor holding `values` (rounded to `dtype`)."""
    values = np.asarray(values, dtype=np.float64)
    raw = contracts.to_storage(values, dtype)
    return {
        "status": "returned",
        "function": "fn",
        "device_type": "cpu",
        "returned": "Tensor",
        "outputs": [
            {
                "dtype": dtype,
                "shape": list(values.shape),
                "stride": [],
                "device_type": "cpu",
                "contiguous": True,
                "guarded": True,
            }
        ],
        "arrays": [raw],
        "launches": [{"kernel": "k", "grid": [1], "constexprs": {}}] * launches,
        "torch_ops": [],
        "guard_violations": [],
        "inputs_modified": [],
    }


@pytest.mark.parametrize("exercise", EXERCISES)
def test_case_plans_are_sound(exercise: str) -> None:
    contract = contracts.get(exercise)
    assert isinstance(contract.FUNCTION, str) and callable(contract.check)
    plan = contract.cases(np.random.default_rng(5), "interpreter")
    names = [c.name for c in plan]
    assert len(names) == len(set(names)) >= 5, names
    for case in plan:
        for arg in list(case.args) + list(case.kwargs.values()):
            if isinstance(arg, Tensor) and arg.values.size:
                finite = arg.values[np.isfinite(arg.values)]
                assert np.any(finite != 0), f"{case.name}: an all-zero input"
                assert np.array_equal(quantize(arg.values, arg.dtype), arg.values, equal_nan=True)


def test_a_size_drawn_equal_to_a_fixed_one_is_a_case_of_its_own(home: Path) -> None:
    """Occupancy's drawn size is 40009 for seed 7777, one of its fixed sizes: the check used to stop with "two
    cases are named" (a clean clone's `make test` met it, its content phase drawing seeds). The later case is
    named with its place, and the check of the solution passes."""
    from tritonlab.content.course import load_course
    from tritonlab.grading.check import cases, pipeline
    from tritonlab.runs import sandbox

    names = [c.name for c in cases.make_cases(contracts.get("occupancy"), 7777, "interpreter")]
    assert names.count("n=40009 float32") == 1 and "n=40009 float32 (case 7)" in names, names
    exercise = load_course().exercise("occupancy")
    zygote = sandbox.Zygote("interpreter")
    try:
        verdict = pipeline.check(exercise, exercise.solution, "interpreter", zygote, seed=7777)
    finally:
        zygote.close()
    assert verdict.passed, verdict.failures
    assert "n=40009 float32 (case 7)" in [c.name for c in verdict.cases]


@pytest.mark.parametrize("exercise", ["pid-map", "copy-2d", "softmax", "debug-rmsnorm"])
def test_gpu_plans_add_larger_cases(exercise: str) -> None:
    contract = contracts.get(exercise)
    small = [c.name for c in contract.cases(np.random.default_rng(5), "interpreter")]
    large = [c.name for c in contract.cases(np.random.default_rng(5), "gpu")]
    assert len(large) == len(set(large))
    assert set(small) < set(large), "the GPU plan keeps every interpreter case and adds larger ones"


def test_bench_protocol_plan_is_the_same_on_every_backend() -> None:
    """Its cases are timings of simulated work, not sizes: a GPU gains nothing from other ones."""
    contract = contracts.get("bench-protocol")
    small = contract.cases(np.random.default_rng(5), "interpreter")
    large = contract.cases(np.random.default_rng(5), "gpu")
    assert [(c.name, c.extra) for c in small] == [(c.name, c.extra) for c in large]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "padded", "offset"])
def test_storage_image_reads_back_the_values(layout: str) -> None:
    t = Tensor(np.arange(1.0, 36.0).reshape(5, 7), "float32", layout)
    storage, strides, offset = storage_image(t)
    assert np.array_equal(read_as(storage, (5, 7), strides, offset), t.values)
    assert storage.size == layout_geometry((5, 7), layout)[2]


def test_gelu_tanh_approximation_fails_in_fp32_and_erf_passes() -> None:
    mb = contracts.get("matmul-bias")
    case = next(
        c for c in mb.cases(np.random.default_rng(3), "interpreter") if c.name.startswith("gelu erf form")
    )
    a, b, bias = case.args
    z = a.values @ b.values + bias.values[None, :]
    assert mb.check(case, result_with(mb.gelu(z))) == []
    failures = mb.check(case, result_with(mb.gelu_tanh(z)))
    assert [f.kind for f in failures] == ["wrong-result"] and "tanh approximation" in failures[0].cause
    assert {f.kind for f in mb.check(case, result_with(mb.gelu(z), launches=2))} == {"too-many-launches"}


def test_matmul_fp32_tolerance_accepts_tf32_on_gpu_only() -> None:
    mm = contracts.get("matmul")
    plan = {c.name: c for c in mm.cases(np.random.default_rng(8), "gpu")}
    case = plan["long K: M=20 N=24 K=300 float32"]
    a, b = case.args

    def tf32(v: np.ndarray) -> np.ndarray:  # keep 10 mantissa bits, round to nearest
        m, e = np.frexp(v)
        return np.ldexp(np.round(m * 2**11) / 2**11, e)

    assert mm.check(case, result_with(tf32(a.values) @ tf32(b.values))) == []
    case.extra["backend"] = "interpreter"
    assert [f.kind for f in mm.check(case, result_with(tf32(a.values) @ tf32(b.values)))] == ["wrong-result"]
    bf16 = quantize(a.values, "bfloat16") @ quantize(b.values, "bfloat16")
    assert mm.check(case, result_with(bf16)) != []


def test_softmax_reference_and_diagnoses() -> None:
    sm = contracts.get("softmax")
    x = np.array([[0.0, 1.0, -np.inf], [-np.inf, -np.inf, -np.inf]])
    ref = sm.reference(x)
    assert np.allclose(ref[0], [1 / (1 + math.e), math.e / (1 + math.e), 0.0]) and np.isnan(ref[1]).all()
    case = Case(
        "c", (Tensor(quantize(np.random.default_rng(1).normal(size=(3, 100)), "float32"), "float32"),)
    )
    assert sm.check(case, result_with(sm.reference(case.args[0].values))) == []
    padded = sm.reference(case.args[0].values, pad=28)
    failures = sm.check(case, result_with(padded))
    assert failures and "other=-float('inf')" in failures[0].cause
    big = Case("big", (Tensor(quantize(np.linspace(-1e4, 1e4, 300).reshape(3, 100), "float32"), "float32"),))
    overflow = np.full((3, 100), np.nan)
    failures = sm.check(big, result_with(overflow))
    assert [f.kind for f in failures] == ["nan-mismatch"] and "max" in failures[
        0
    ].cause  # the row's max, in either diagnosis


def test_wrong_output_dtype_and_unwritten_are_named() -> None:
    pid = contracts.get("pid-map")
    case = Case("n=10", (10, 4, contracts.DEVICE))
    expected = np.arange(10) // 4
    assert pid.check(case, result_with(expected, "int32")) == []
    assert [f.kind for f in pid.check(case, result_with(expected, "int64"))] == ["wrong-dtype"]
    raw = contracts.to_storage(expected.astype(float), "int32")
    raw[8:] = 0x5A5A5A5A  # the poison of a never-written int32
    result = result_with(expected, "int32")
    result["arrays"] = [raw]
    result["launches"] = [{"kernel": "k", "grid": [2], "constexprs": {"BLOCK": 4}}]
    (failure,) = pid.check(case, result)
    assert failure.kind == "unwritten-output" and "cdiv" in failure.cause


def test_unwritten_2d_names_rows_and_columns() -> None:
    grid = np.zeros((6, 9), dtype=bool)
    grid[4:, :] = True
    grid[:, 8:] = True
    cause, grid_error = unwritten_cause_2d(np.flatnonzero(grid), (6, 9))
    assert "rows ≥ 4" in cause and "columns ≥ 8" in cause and grid_error


def test_bench_protocol_judges_median_units_and_calls() -> None:
    bp = contracts.get("bench-protocol")
    case = next(c for c in bp.cases(np.random.default_rng(2), "interpreter") if "outlier" in c.name)
    timed = case.extra["durations"][case.extra["warmup"] :]
    calls = len(case.extra["durations"])
    ok = {"status": "returned", "data": {"value": float(np.median(timed)) + 0.3, "calls": calls}}
    assert bp.check(case, ok) == []
    mean = {"status": "returned", "data": {"value": float(np.mean(timed)), "calls": calls}}
    assert "mean" in bp.check(case, mean)[0].cause
    seconds = {"status": "returned", "data": {"value": float(np.median(timed)) / 1e3, "calls": calls}}
    assert "seconds" in bp.check(case, seconds)[0].cause
    extra_call = {"status": "returned", "data": {"value": float(np.median(timed)), "calls": calls + 1}}
    assert "called" in bp.check(case, extra_call)[0].message


def test_rmsnorm_diagnoses_block_divisor_and_eps() -> None:
    rms = contracts.get("debug-rmsnorm")
    x = quantize(np.random.default_rng(4).normal(size=(3, 100)), "float32")
    w = quantize(np.ones(100), "float32")
    case = Case("c", (Tensor(x, "float32"), Tensor(w, "float32")), {"eps": 1e-2})
    assert rms.check(case, result_with(rms.reference(x, w, 1e-2))) == []
    assert "block size 128" in rms.check(case, result_with(rms.reference(x, w, 1e-2, divisor=128)))[0].cause
    assert "eps has no effect" in rms.check(case, result_with(rms.reference(x, w, 0.0)))[0].cause


def test_attention_hints_on_a_large_case_come_from_its_first_rows_and_name_the_mistake() -> None:
    """A large GPU case is diagnosed on the first DIAGNOSE_ROWS queries of its first batch element: on the H200
    the full float64 alternatives of three such cases took a minute for a wrong starter. The hint must still be
    found, for each mistake the diagnosis names (here: no scale, no causal mask, K/V head h % H_kv)."""
    from tritonlab.grading.contracts import attention_forward as af

    rng = np.random.default_rng(11)
    case = af._case(rng, "large: ", (2, 8, 2, 300, 64), "float16")
    q, k, v = (t.values for t in case.args)
    assert q.shape[2] > af.DIAGNOSE_ROWS
    scale = af.scale_of(case)
    mistakes = {
        "sqrt": af.reference(q, k, v, 1.0),
        "causal mask is missing": af.reference(q, k, v, scale, causal=False),
        "h // g": af.reference(q, k, v, scale, kv_map="interleaved"),
    }
    for words, wrong in mistakes.items():
        result = result_with(wrong["o"], "float16")
        result["returned"] = "tuple"
        lse = result_with(wrong["lse"], "float32")
        result["outputs"].append(lse["outputs"][0])
        result["arrays"].append(lse["arrays"][0])
        failures = af.check(case, result)
        assert failures and any(words in f.cause for f in failures), (
            words,
            [(f.kind, f.cause) for f in failures],
        )
    assert "expected" in case.memo and "tolerances" in case.memo  # the reference is made once per case
    right = case.memo["expected"]
    result = result_with(right["o"], "float16")
    result["returned"] = "tuple"
    lse = result_with(right["lse"], "float32")
    result["outputs"].append(lse["outputs"][0])
    result["arrays"].append(lse["arrays"][0])
    assert af.check(case, result) == []
    q_cut, _, ref, tol = af.first_rows(q, q, case.memo["expected"], case.memo["tolerances"])
    assert q_cut.shape == (1, 8, af.DIAGNOSE_ROWS, 64) and ref["o"].shape == (1, 8, af.DIAGNOSE_ROWS, 64)
    assert tol["o"][1].shape == (1, 8, af.DIAGNOSE_ROWS, 64) and tol["lse"][1].shape == (
        1,
        8,
        af.DIAGNOSE_ROWS,
    )


def test_attention_reference_groups_consecutive_query_heads() -> None:
    """The contract's mapping (query head h reads K/V head h // g) against a loop over the heads, and the
    causal mask (row i sees keys j <= i), in float64."""
    from tritonlab.grading.contracts import attention_forward as af

    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(1, 8, 5, 4)), rng.normal(size=(1, 2, 5, 4)), rng.normal(size=(1, 2, 5, 4))
    got = af.reference(q, k, v, 0.5)
    for h in range(8):
        s = q[0, h] @ k[0, h // 4].T * 0.5
        s[np.triu_indices(5, 1)] = -np.inf
        p = np.exp(s - s.max(-1, keepdims=True))
        assert np.allclose(got["o"][0, h], (p / p.sum(-1, keepdims=True)) @ v[0, h // 4])
        assert np.allclose(got["lse"][0, h], np.log(np.exp(s).sum(-1)))


def aw_result(case: Case, triples: int = 1) -> dict:
    """A child's result holding the float64 values of c, da, db rounded to the case's dtype (`triples` times:
    a compile case returns the eager triple and the compiled one)."""
    from tritonlab.grading.contracts import autograd_wrap as aw

    exp = aw.expected(case)
    dtype = case.args[0].dtype
    result = result_with(exp["c"], dtype)
    for key in ("da", "db", "c", "da", "db")[: 3 * triples - 1]:
        extra = result_with(exp[key], dtype)
        result["outputs"].append(extra["outputs"][0])
        result["arrays"].append(extra["arrays"][0])
    result["data"] = {
        "returned": "Tensor",
        "fwd_launches": 1,
        "bwd_launches": 1,
        "requires_grad": True,
        "same_shape": True,
        "a_grad": True,
        "b_grad": True,
    }
    return result


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_autograd_wrap_accepts_every_output_rounded_to_nearest_even_below_the_normal_range(
    dtype: str,
) -> None:
    """A float16 c, da or db that lands among the subnormals has a fixed step (2**-24), which no relative
    tolerance covers: the float64 values rounded to the case's dtype must always pass (CI once failed a course
    solution on one such element), while an output off by a few units of its dtype fails."""
    from tritonlab.grading.contracts import autograd_wrap as aw

    rng = np.random.default_rng(5)
    case = aw._case(rng, "", (3, 5, 96), dtype)
    a = case.args[0].values
    a[0, 0, :8] = quantize(np.array([3e-7, -4e-7, 1e-6, 2e-6, 5e-6, 1e-5, -3e-5, 5e-5]), dtype)
    if dtype == "float16":
        c16 = quantize(aw.expected(case)["c"], dtype)
        assert np.count_nonzero((c16 != 0) & (np.abs(c16) < 2.0**-14)) >= 6  # the subnormals are tested
    result = aw_result(case)
    assert aw.check(case, result) == []
    unit = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}[dtype]
    result["arrays"][0] = contracts.to_storage(
        quantize(aw.expected(case)["c"], dtype) * (1 + 64 * unit), dtype
    )
    assert [f.kind for f in aw.check(case, result)] == ["wrong-result"]  # while a wrong c still fails


def test_autograd_wrap_judges_the_gradcheck_and_compile_reports_of_the_child() -> None:
    """The child's gradcheck can fail a case (its message shown) but never pass one; a compile case failing
    under fullgraph=True is an `exception` naming the graph break's usual causes; a c of the wrong shape is
    `wrong-shape`, with no gradient asked of it."""
    from tritonlab.grading.contracts import autograd_wrap as aw

    rng = np.random.default_rng(3)
    plan = aw.cases(rng, "gpu")
    gc = next(c for c in plan if c.extra.get("gradcheck"))
    comp = next(c for c in plan if c.extra.get("compile"))
    assert gc.args[0].dtype == "float64" and comp.name.startswith("torch.compile(fullgraph=True)")
    assert not any(c.extra.get("compile") for c in aw.cases(rng, "interpreter"))
    ok = aw_result(gc)
    assert aw.check(gc, ok) == []
    ok["data"]["gradcheck"] = "GradcheckError: Jacobian mismatch for output 0 with respect to input 0"
    failed = aw.check(gc, ok)
    assert [f.kind for f in failed] == ["wrong-result"] and "gradcheck failed" in failed[0].message
    both = aw_result(comp, triples=2)
    assert len(both["arrays"]) == 6 and aw.check(comp, both) == []
    both["arrays"][4] = both["arrays"][0]  # the compiled da is the eager c: the compiled run is judged too
    assert "compiled: a.grad" in " ".join(f.message for f in aw.check(comp, both))
    both["data"]["compile_error"] = "Unsupported: Tensor.item() call with capture_scalar_outputs=False"
    failed = aw.check(comp, both)
    assert [f.kind for f in failed] == ["exception"] and ".item()" in failed[0].cause
    flat = result_with(aw.expected(gc)["c"].reshape(-1, 3), "float64")
    flat["data"] = {"returned": "Tensor", "fwd_launches": 1, "requires_grad": True, "same_shape": False}
    assert [f.kind for f in aw.check(gc, flat)] == ["wrong-shape"]


def _every_exercise() -> list[str]:
    from tritonlab.content.course import load_course

    return [ex.id for ex in load_course().exercises()]


@pytest.mark.parametrize("backend", ["interpreter", "gpu"])
@pytest.mark.parametrize("exercise", _every_exercise())
def test_case_names_are_unique(exercise: str, backend: str) -> None:
    """Results, replays and verdicts name their cases: persistent-matmul once had two cases named
    'M=45 N=37 K=70 bfloat16, num_sms=132' (its own and matmul's plan's), and on the GPU one was judged against
    the other's expected values (H200 run 2026-12-04 (e98e901)). `make_cases` refuses such a plan."""
    from tritonlab.grading.check.cases import make_cases

    try:
        contract = contracts.get(exercise)
    except KeyError:
        pytest.skip(f"{exercise} has no contract (not a kernel exercise)")
    names = [c.name for c in make_cases(contract, 11, backend)]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


class _Draws:
    """A generator stand-in whose normal draws are given (exact zeros of both signs among them)."""

    def __init__(self, values: list[float]) -> None:
        self.values = np.array(values, dtype=np.float64)

    def standard_normal(self, size: tuple[int, ...], dtype: type = np.float64) -> np.ndarray:
        return self.values.reshape(size).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("scale", [1.0, 3.0, -2.0])
def test_random_values_replace_zeros_and_round_to_the_dtype(dtype: str, scale: float) -> None:
    """Every draw is scaled, an exact zero (+0.0 or -0.0) becomes 0.5·scale (an unwritten output must never look
    right by accident), and each value is the nearest one `dtype` holds: the values cases are made of. A dtype
    of float32 or less is drawn and scaled in float32 (half the time of float64 for a GPU case's 2²⁴ values)."""
    from tritonlab.grading.contracts import quantize, random_values

    draws = [0.0, -0.0, 1.1, -3.3e-5, 7000.123, 1e-3]
    got = random_values(_Draws(draws), (2, 3), dtype, scale)
    kind = np.float64 if dtype == "float64" else np.float32
    scaled = [kind(0.5 * scale) if d == 0 else kind(d) * kind(scale) for d in draws]
    want = quantize(np.array(scaled, dtype=np.float64).reshape(2, 3), dtype)
    if dtype == "float64":  # drawn in float64: nothing rounded away
        assert got[0, 2] == 1.1 * scale, got
    assert got.dtype == np.float64 and np.array_equal(got, want), (got, want)
    assert (got != 0).all() and got.flat[0] == got.flat[1] == quantize(np.array([0.5 * scale]), dtype)[0], got


@pytest.mark.parametrize("chunk", [1, 3, 7, 1 << 18])
def test_values_are_judged_alike_in_any_chunk_size(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tolerance check walks the output in chunks (_values.CHUNK): the elements it reports, their count and
    the worst one are those of the whole array, wherever the chunks' edges fall."""
    from tritonlab.grading.contracts import _values

    expected = np.linspace(1.0, 20.0, 20)
    actual = expected.copy()
    wrong = [2, 3, 9, 17]
    actual[wrong] += [0.5, 0.25, 4.0, 1.0]  # index 9 is the worst, relative to its bound
    result = {"outputs": [{"shape": [20], "dtype": "float64"}], "arrays": [actual], "launches": []}
    monkeypatch.setattr(_values, "CHUNK", chunk)
    (failure,) = _values.compare_values(Case("c", ()), result, expected, "float64", 1e-6, 0.0)
    assert failure.kind == "wrong-result" and "4" in failure.message and "[9]" in failure.message, (
        failure.message
    )
    for i in wrong:
        assert f"[{i}]" in failure.message, failure.message
    assert (
        _values.compare_values(
            Case("c", ()), {**result, "arrays": [expected.copy()]}, expected, "float64", 1e-6, 0.0
        )
        == []
    )


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_a_large_case_draws_fresh_uniform_values_of_its_dtype(
    dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From LARGE elements on (a GPU check's big cases) the draws are uniform on [-2·scale, 2·scale) instead of
    normal, eight times cheaper for the server: still no exact zero, each value one the dtype holds, and two
    seeds give different values (a kernel cannot pass on a stale output)."""
    from tritonlab.grading import contracts as c

    monkeypatch.setattr(c, "LARGE", 4096)
    rng = np.random.default_rng(5)
    got = c.random_values(rng, (64, 64), dtype, 3.0)
    assert got.dtype == np.float64 and (got != 0).all()
    assert got.min() >= -6.0 and got.max() <= 6.0 and got.std() > 2.5  # uniform on [-6, 6): std 3.46
    assert np.array_equal(got, c.quantize(got, dtype))
    small = c.random_values(np.random.default_rng(5), (63, 64), dtype, 3.0)  # below LARGE: normal, std 3
    assert np.abs(small).max() > 6.0
    assert not np.array_equal(got, c.random_values(np.random.default_rng(6), (64, 64), dtype, 3.0))
