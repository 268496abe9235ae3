"""Likely causes are attached on evidence, not by case (issue 16): each test builds the result a specific wrong
kernel gives and checks that the cause which does not fit it stays away, and the one that fits is named."""

from __future__ import annotations

import numpy as np

from tritonlab.grading import contracts
from tritonlab.grading.contracts import Case, Tensor, quantize
from tritonlab.grading.contracts import bench_protocol as bench
from tritonlab.grading.contracts import debug_rmsnorm as rms
from tritonlab.grading.contracts._values import unwritten_cause
from tritonlab.grading.contracts.compare import MASK_CAUSE, host_checks


def result_with(values: np.ndarray, dtype: str = "float32", **extra: object) -> dict:
    raw = contracts.to_storage(np.asarray(values, dtype=np.float64), dtype)
    out = {"file": "o.npy", "dtype": dtype, "shape": list(np.shape(values)), "guarded": True}
    return {"status": "returned", "outputs": [out], "arrays": [raw], "launches": [{"grid": [1]}]} | extra


def violation(after: list[int], numel: int = 100) -> dict:
    return {"guard_violations": [{"label": "output #1", "numel": numel, "after": after, "before": []}]}


def test_mask_cause_only_for_writes_that_run_on_from_the_end() -> None:
    case = Case("c", ())
    (missing_mask,) = host_checks(case, violation([100, 101, 102]), allow_copies=True, needs_launch=False)
    assert missing_mask.cause == MASK_CAUSE
    # a masked store with a wrong row stride: its stray writes are scattered, not the lanes after the end
    (scattered,) = host_checks(case, violation([100, 137, 174]), allow_copies=True, needs_launch=False)
    (far,) = host_checks(case, violation([160, 161]), allow_copies=True, needs_launch=False)
    for failure in (scattered, far):
        assert "mask" not in failure.cause and "strides" in failure.cause


def test_grid_cause_reads_every_axis() -> None:
    n, block = 100, 16
    unwritten = np.arange(96, 100)
    one_axis = {"launches": [{"grid": [6], "constexprs": {"BLOCK": block}}]}
    cause, grid_error = unwritten_cause(unwritten, n, block, one_axis)
    assert grid_error and "cdiv" in cause and "6 program" in cause
    # (1, 7) programs cover all 100 elements: the tail is not the grid's fault, so no grid advice
    two_axes = {"launches": [{"grid": [1, 7], "constexprs": {"BLOCK": block}}]}
    cause, grid_error = unwritten_cause(unwritten, n, block, two_axes)
    assert not grid_error and "one too few" not in cause


def test_stride_hint_only_when_a_misreading_explains_the_output() -> None:
    softmax = contracts.get("softmax")
    x = quantize(np.random.default_rng(3).normal(size=(12, 20)), "float32")
    case = Case("transposed", (Tensor(x, "float32", "transposed"),))
    right = softmax.reference(x)
    # strides right, but every value off by a little (e.g. a wrong max): no stride hint
    failures = softmax.check(case, result_with(right * 1.01))
    assert failures and not any("stride" in f.cause for f in failures)
    # read as if contiguous: the hint names the strides
    flat = x.T.reshape(-1)[: x.size].reshape(x.shape)  # the storage of a transposed tensor, read row-major
    failures = softmax.check(case, result_with(softmax.reference(flat)))
    assert failures and any("strides" in f.cause for f in failures)


def test_bench_missing_synchronize_is_not_called_a_unit_mistake() -> None:
    timed, median = [4.0] * 5, 4.0
    # no synchronize: the clock reads ~0.004 ms, which happens to sit where "seconds" would be
    unsynced = bench.diagnose(0.004, timed, [4.0, 4.0], median, True, syncs=0)
    assert "1000" not in unsynced and "synchronize" in unsynced
    synced = bench.diagnose(0.004, timed, [4.0, 4.0], median, True, syncs=7)
    assert "1000" in synced
    assert "1000" in bench.diagnose(0.004, timed, [], median, False)


def test_rmsnorm_fp16_overflow_cause_needs_the_overflow_signature() -> None:
    case = next(c for c in rms.cases(np.random.default_rng(1), "interpreter") if "overflows" in c.name)
    x, w = case.args
    expected = rms.reference(x.values, w.values, 1e-6)
    overflowed = result_with(np.zeros_like(expected), "float16")  # rsqrt(inf) = 0: every output 0
    assert "overflows" in rms.diagnosis(case, overflowed, 1e-6, 1e-3, 0.0)
    # upcast, but eps outside the sqrt: a finite, near-right output is not an overflow
    outside = rms.reference(x.values, w.values, 1e-6, mode="outside-sqrt") * 1.05
    assert "overflows" not in rms.diagnosis(case, result_with(outside, "float16"), 1e-6, 1e-3, 0.0)


def test_no_stride_hint_is_computed_for_a_case_past_the_hint_size(monkeypatch) -> None:
    """The diagnosis rebuilds every input's storage once per trial: a GPU check's large strided cases (beside
    small ones of the same layouts, which get it) get none, so a wrong file costs the server what a right one
    does. The same misreading at the size bound's edge is still named."""
    from tritonlab.grading.contracts import _layout

    softmax = contracts.get("softmax")
    x = quantize(np.random.default_rng(3).normal(size=(12, 20)), "float32")
    case = Case("transposed", (Tensor(x, "float32", "transposed"),))
    flat = x.T.reshape(-1)[: x.size].reshape(x.shape)
    misread = result_with(softmax.reference(flat))
    monkeypatch.setattr(_layout, "HINT_MAX_ELEMENTS", x.size)
    assert any("strides" in f.cause for f in softmax.check(case, misread))
    monkeypatch.setattr(_layout, "HINT_MAX_ELEMENTS", x.size - 1)
    failures = softmax.check(case, misread)
    assert failures and not any("strides" in f.cause for f in failures)  # still failed, without the hint
