"""Lesson 13's contracts in the parent alone (numpy only): what the GPU cases will accept, checked here.

The interpreter skips bf16 cases and cannot afford the GPU's sizes, so each test emulates in numpy what a right
kernel computes on a GPU (fp32 accumulation, p and dS rounded to the input dtype before their products, a
block scan with a carry, a counter-based mask) and requires the contract to accept it, and to reject the usual
mistake made the same way.
"""

from __future__ import annotations

import numpy as np
import pytest

from tritonlab.grading import contracts
from tritonlab.grading.contracts import Case, quantize
from tritonlab.grading.contracts import attention_backward as ab
from tritonlab.grading.contracts import cumsum as cs
from tritonlab.grading.contracts import dropout as do


def result_of(arrays: list[tuple[np.ndarray, str]], returned: str = "tuple", launches: int = 1) -> dict:
    """A child's result returning these tensors (values rounded to their dtype)."""
    return {
        "status": "returned",
        "function": "fn",
        "device_type": "cuda",
        "returned": returned,
        "outputs": [
            {"dtype": dtype, "shape": list(v.shape), "device_type": "cuda", "guarded": True}
            for v, dtype in arrays
        ],
        "arrays": [contracts.to_storage(quantize(v, dtype), dtype) for v, dtype in arrays],
        "launches": [{"kernel": "k", "grid": [1], "constexprs": {}}] * launches,
        "torch_ops": [],
        "guard_violations": [],
        "inputs_modified": [],
    }


# ---- attention-backward ------------------------------------------------------------------------------------


def kernel_gradients(case: Case, *, causal: bool = True) -> dict[str, np.ndarray]:
    """What the lesson's kernels compute on a GPU: fp32 products and sums, p and dS rounded to the input dtype
    for their tl.dot, Δ from the given (rounded) o, p rebuilt from the given fp32 lse."""
    q, k, v, o, lse, dout = (t.values for t in case.args)
    dtype = case.args[0].dtype
    f32 = np.float32
    scale = f32(ab.scale_of(case))
    s = np.einsum("bhid,bhjd->bhij", q.astype(f32), k.astype(f32)) * scale
    n = s.shape[-1]
    visible = np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)
    p = np.where(visible, np.exp(np.minimum(s - lse.astype(f32)[..., None], 0 if causal else 80)), 0).astype(
        f32
    )
    p_in = quantize(p, dtype).astype(f32)
    delta = np.sum(dout.astype(f32) * o.astype(f32), axis=-1, keepdims=True)
    dp = np.einsum("bhid,bhjd->bhij", dout.astype(f32), v.astype(f32))
    ds = quantize(p * (dp - delta), dtype).astype(f32)
    return {
        "dq": np.einsum("bhij,bhjd->bhid", ds, k.astype(f32)) * scale,
        "dk": np.einsum("bhij,bhid->bhjd", ds, q.astype(f32)) * scale,
        "dv": np.einsum("bhij,bhid->bhjd", p_in, dout.astype(f32)),
    }


def test_attention_backward_references_are_autograds_in_float64() -> None:
    """The contract's own float64 forward (o, lse) and gradients (batched matrix products) against torch's
    autograd of causal attention, on uneven shapes: the references every case is judged against."""
    import torch

    rng = np.random.default_rng(11)
    q, k, v, dout = (rng.standard_normal((2, 3, 37, 16)) for _ in range(4))
    scale = 0.3
    o, lse = ab.forward(q, k, v, scale)
    g = ab.gradients(q, k, v, dout, scale)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    mask = torch.ones(37, 37, dtype=torch.bool).tril()
    s = (tq @ tk.transpose(-1, -2) * scale).masked_fill(~mask, float("-inf"))
    to = torch.softmax(s, dim=-1) @ tv
    to.backward(torch.tensor(dout))
    np.testing.assert_allclose(o, to.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse, torch.logsumexp(s, dim=-1).detach().numpy(), rtol=1e-12, atol=1e-12)
    for name, tensor in (("dq", tq), ("dk", tk), ("dv", tv)):
        np.testing.assert_allclose(g[name], tensor.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.mark.parametrize(
    ("shape", "dtype"),
    [((1, 2, 700, 64), "float16"), ((1, 1, 1024, 128), "bfloat16"), ((1, 2, 77, 64), "bfloat16")],
)
def test_attention_backward_accepts_a_gpu_kernels_rounding(shape: tuple, dtype: str) -> None:
    case = ab._case(np.random.default_rng(3), "large: ", shape, dtype)
    g = kernel_gradients(case)
    result = result_of([(g[name], dtype) for name in ab.OUTPUTS])
    assert ab.check(case, result) == []


def test_attention_backward_keeps_no_score_matrix_with_its_case() -> None:
    """The probabilities and scores (B·H·S·S float64 each) serve the tolerances alone: once `prepare` made
    them, the case the server caches holds the inputs, gradients and tolerances, and judging (again) works."""
    from tritonlab.grading import case_cache

    case = ab._case(np.random.default_rng(5), "large: ", (1, 2, 1024, 16), "float16")
    g, tol = ab.prepare(case)
    assert "p" not in g and "s" not in g and set(ab.OUTPUTS) <= set(g)
    square = 2 * 1024 * 1024 * 8  # one (B, H, S, S) float64 matrix
    assert case_cache.held_bytes([case]) < square, case_cache.held_bytes([case])
    assert ab.prepare(case) == (g, tol)  # memoised: nothing needs the matrices again
    right = kernel_gradients(case)
    assert ab.check(case, result_of([(right[name], "float16") for name in ab.OUTPUTS])) == []


def test_attention_backward_rejects_the_non_causal_gradients_and_names_them() -> None:
    case = ab._case(np.random.default_rng(4), "", (1, 2, 90, 64), "bfloat16")
    g = kernel_gradients(case, causal=False)
    failures = ab.check(case, result_of([(g[name], "bfloat16") for name in ab.OUTPUTS]))
    assert {f.kind for f in failures} == {"wrong-result"}
    assert all("NON-causal" in f.cause for f in failures), [f.cause for f in failures]


def test_attention_backward_wants_three_tensors() -> None:
    case = ab._case(np.random.default_rng(5), "", (1, 1, 8, 16), "float16")
    g = kernel_gradients(case)
    failures = ab.check(case, result_of([(g["dq"], "float16"), (g["dk"], "float16")]))
    assert [f.kind for f in failures] == ["wrong-result"] and "(dq, dk, dv)" in failures[0].message


# ---- dropout -----------------------------------------------------------------------------------------------


def draws(seed: int, start: int, n: int) -> np.ndarray:
    """A stand-in for tl.rand: the uniform numbers of counters start .. start + n − 1 under `seed`."""
    return np.random.default_rng([seed, 7]).random(start + n)[start:]


def dropout_result(case: Case, *, mask_of=None, scale_kept: bool = True) -> dict:
    """The four outputs of a right kernel (or of `mask_of(seed, offset, n) -> bool array`, a wrong one)."""
    x, residual, grad, p, seed, offset = case.args
    n = x.values.size
    shift = case.extra["shift"]
    keep_of = mask_of or (lambda s, o, count: draws(s, o, count) >= p)
    scale = 1.0 / (1.0 - p) if scale_kept else 1.0

    def forward(s: int, o: int) -> np.ndarray:
        keep = keep_of(s, o, n).reshape(x.values.shape)
        return residual.values + np.where(keep, x.values * scale, 0.0)

    dx = np.where(keep_of(seed, offset, n).reshape(x.values.shape), grad.values * scale, 0.0)
    arrays = [(dx, grad.dtype), (forward(seed, offset), x.dtype), (forward(seed + 1, offset), x.dtype)]
    arrays.append((forward(seed, offset + shift), x.dtype))
    result = result_of(arrays, returned="dict", launches=4)
    result["data"] = {"returned": ["Tensor"] * 4}
    return result


def stats_cases() -> list[Case]:
    plan = do.cases(np.random.default_rng(9), "gpu")
    return [c for c in plan if not c.expect_error]


def test_dropout_accepts_right_masks_at_every_p_and_size() -> None:
    """Z = 6 deviations: 40 seeds of every case (the GPU's included) give no false failure."""
    for case in stats_cases():
        for trial in range(40 if case.args[0].values.size < 100_000 else 2):
            x, residual, grad, p, seed, offset = case.args
            case.args = (x, residual, grad, p, seed + 1000 * trial, offset)
            assert do.check(case, dropout_result(case)) == [], (case.name, trial)


@pytest.mark.parametrize(
    ("mistake", "mask_of", "cause"),
    [
        (
            "the same draws in every block of 256",
            lambda s, o, n: np.resize(draws(s, o, 256), n) >= 0.3,
            "global index",
        ),
        ("kept with probability p", lambda s, o, n: draws(s, o, n) < 0.3, "at least p"),
        ("the seed ignored", lambda s, o, n: draws(1, o, n) >= 0.3, "seed"),
        ("the offset ignored", lambda s, o, n: draws(s, 0, n) >= 0.3, "offset"),
    ],
)
def test_dropout_rejects_the_usual_masks(mistake: str, mask_of, cause: str) -> None:  # noqa: ANN001
    case = next(c for c in do.cases(np.random.default_rng(2), "interpreter") if c.name.startswith("40×100"))
    failures = do.check(case, dropout_result(case, mask_of=mask_of))
    assert failures and {f.kind for f in failures} == {"wrong-result"}, mistake
    assert any(cause in f.cause for f in failures), (mistake, [f.cause for f in failures])


def test_dropout_rejects_unscaled_values_and_names_the_scale() -> None:
    case = next(c for c in do.cases(np.random.default_rng(2), "interpreter") if c.name.startswith("40×100"))
    failures = do.check(case, dropout_result(case, scale_kept=False))
    assert failures and all("divided by 1 − p" in f.cause for f in failures)


def test_dropout_counters_never_make_a_kernel_of_their_own() -> None:
    """Triton specialises an integer argument equal to 1 or divisible by 16: a case's seed, seed + 1, offset or
    offset + shift that was one compiled one more kernel on a GPU (benchmarks/check_compiles.py). They never
    are now, while the shift still takes every value of 1–96."""
    rng = np.random.default_rng(11)
    shifts = set()
    for _ in range(20_000):
        seed, offset, shift = do.counters(rng)
        assert all(v != 1 and v % 16 for v in (seed, seed + 1, offset, offset + shift)), (seed, offset, shift)
        assert 0 <= seed < 2**31 - 1 and offset >= 0
        shifts.add(shift)
    assert shifts == set(range(1, 97))


LAUNCH_KEYS = r"""
import importlib.util, json, sys
import numpy as np, torch
from triton.runtime import autotuner
from triton.runtime.jit import JITFunction
from tritonlab.content.course import load_course
from tritonlab.grading import triton_api
from tritonlab.grading.contracts import dropout as do

exercise = next(e for e in load_course().exercises() if e.id == "dropout")
spec = importlib.util.spec_from_file_location("solution", exercise.solution)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
out = []
for seed in range(4):
    for case in do.cases(np.random.default_rng(seed), "gpu"):
        if case.expect_error or case.args[0].values.size > 100_000:
            continue
        x, residual, _grad, p, s, offset = case.args
        tensors = [torch.from_numpy(t.values.astype(np.float32)) for t in (x, residual)]
        recorded = []
        run, tuned = JITFunction.run, autotuner.Autotuner.run
        triton_api.intercept_launches(recorded)
        try:
            module.dropout_add(*tensors, p, s, offset=offset)
            module.dropout_add(*tensors, p, s + 1, offset=offset)
            module.dropout_add(*tensors, p, s, offset=offset + case.extra["shift"])
        finally:
            JITFunction.run, autotuner.Autotuner.run = run, tuned
        keys = set()
        for jit_fn, args, kwargs in recorded:
            signature, constexprs, attrs, options = triton_api.bind_launch(jit_fn, args, kwargs)
            keys.add(repr((signature, sorted(constexprs.items()), sorted(attrs), options)))
        out.append([case.name, len(recorded), len(keys)])
print(json.dumps(out))
"""


def test_dropout_forward_calls_of_a_case_share_one_compiled_kernel() -> None:
    """What a GPU check compiles: the course solution's launches of each case (recorded, not run, on CPU
    tensors, in a process with the interpreter off: a compiled kernel's launch path) keyed as Triton's launcher
    keys its compile cache; a case's three forward calls are one kernel."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parent.parent / "src"
    env = dict(
        os.environ,
        TRITON_INTERPRET="0",
        PYTHONPATH=os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    )
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH_KEYS], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(rows) >= 20, rows
    assert all(launched == 3 and keys == 1 for _name, launched, keys in rows), rows


# ---- cumsum ------------------------------------------------------------------------------------------------


def block_scan(x: np.ndarray, block: int, carry: bool = True) -> np.ndarray:
    """A GPU kernel's running sums: fp32 within each block (sequential: the worst order), an fp32 carry."""
    out = np.empty(x.shape, dtype=np.float32)
    total = np.zeros(x.shape[0], dtype=np.float32)
    for start in range(0, x.shape[1], block):
        part = np.cumsum(x[:, start : start + block].astype(np.float32), axis=1, dtype=np.float32)
        out[:, start : start + block] = part + (total[:, None] if carry else 0)
        total = total + part[:, -1] if carry else total
    return out


def test_cumsum_accepts_a_gpu_scan_of_rows_longer_than_any_block() -> None:
    plan = {c.name: c for c in cs.cases(np.random.default_rng(6), "gpu")}
    longest = next(c for name, c in plan.items() if name.startswith("rows longer than any block"))
    x = longest.args[0].values
    assert x.shape[1] > cs.LONGEST_BLOCK
    assert cs.check(longest, result_of([(block_scan(x, 1024), "float32")], returned="Tensor")) == []
    failures = cs.check(
        longest, result_of([(block_scan(x, 1024, carry=False), "float32")], returned="Tensor")
    )
    assert [f.kind for f in failures] == ["wrong-result"] and "starts again from zero" in failures[0].cause
    big = next(c for name, c in plan.items() if name.startswith("large: 1024×4096 bfloat16"))
    assert (
        cs.check(big, result_of([(block_scan(big.args[0].values, 1024), "bfloat16")], returned="Tensor"))
        == []
    )
