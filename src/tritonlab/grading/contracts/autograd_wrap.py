"""autograd-wrap (lesson 11): `rms_norm(x, weight, eps=1e-6)` is differentiable: its forward and backward run
Triton kernels, glued by a `torch.autograd.Function`. Graded eagerly, on every backend, inside a tiny model:

    y = rms_norm(x, weight)            x: (..., N) in fp32/fp16/bf16 (2-D or 3-D, some strided), weight (N,)
    loss = Σ (y.double() @ P) * T      P (N, K) and T (..., K) fixed float64 tensors
    dx, dw = torch.autograd.grad(y, (x, weight), grad_outputs=dy)

where dy = T @ Pᵀ rounded to y's dtype is d loss / d y, computed by the parent and handed in as a case input
(what `loss.backward()` would feed the learner's backward). The child records the output, loss, both gradients
and how many kernels the forward and the backward launched. The parent compares them with float64 values: y,
the loss (within the rounding of y), and the gradients of RMSNorm for dy. A backward that launches no Triton
kernel, or a forward whose output does not require grad, is named as such.

Launch replay: dy is an input like x, so the forward's and the backward's launches replayed from the inputs
alone must give y, dx and dw (the loss is the grader's own arithmetic on y, not replayed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tritonlab.grading.contracts import TINY, UNIT_ROUNDOFF, Case, Tensor, quantize, random_values
from tritonlab.grading.contracts import rmsnorm_backward as rb
from tritonlab.grading.contracts.compare import compare_values, exception_failure
from tritonlab.models import Failure

# The upstream gradient is a grader-provided input (not computed by torch's autograd from the loss), so the
# forward's and backward's launches can be replayed from the inputs alone: y, dx, dw (returned outputs 0, 2, 3).
REPLAY = True
REPLAY_OUTPUTS = (0, 2, 3)

FUNCTION = "rms_norm"
ARG_NAMES = ["x", "weight", "proj", "target", "dy"]
U32 = UNIT_ROUNDOFF["float32"]


def _case(
    rng: np.random.Generator,
    label: str,
    shape: tuple[int, ...],
    dtype: str,
    *,
    layout: str = "contiguous",
    k: int = 6,
    eps: float | None = None,
) -> Case:
    n = shape[-1]
    x = Tensor(random_values(rng, shape, dtype), dtype, layout)
    w = Tensor(quantize(1.0 + 0.3 * rng.standard_normal(n), dtype), dtype)
    proj = Tensor(random_values(rng, (n, k), "float64", 1.0 / np.sqrt(n)), "float64")
    target = Tensor(random_values(rng, shape[:-1] + (k,), "float64"), "float64")
    dy = Tensor(quantize(target.values @ proj.values.T, dtype), dtype)  # d loss / d y, in y's dtype
    kwargs = {} if eps is None else {"eps": eps}
    dims = "×".join(str(d) for d in shape)
    name = (
        f"{label}x {dims} {dtype}"
        + ("" if layout == "contiguous" else f" {layout}")
        + ("" if eps is None else f", eps={eps:g}")
    )
    extra = {"bf16_arithmetic": True} if dtype == "bfloat16" else {}
    return Case(name, (x, w, proj, target, dy), kwargs, extra=extra)


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    out = [
        _case(rng, "", (1, 1), "float32"),
        _case(rng, "", (5, 33), "float32"),
        _case(rng, "batch × sequence: ", (2, 7, 40), "float32"),
        _case(rng, "many rows: ", (48, 20), "float32"),
        _case(rng, "", (int(rng.integers(3, 20)), int(rng.integers(10, 300))), "float32"),
        _case(rng, "transposed x: ", (24, 36), "float32", layout="transposed"),
        _case(rng, "row stride ≠ N: ", (9, 50), "float32", layout="padded"),
        _case(rng, "eps given: ", (4, 64), "float32", eps=1e-2),
        _case(rng, "batch × sequence: ", (3, 5, 96), "float16"),
        _case(rng, "", (6, 130), "bfloat16"),
    ]
    if backend == "gpu":
        out += [
            _case(rng, "large: ", (8, 512, 1024), "bfloat16", k=16),
            _case(rng, "large: ", (4096, 768), "float32", k=16),
        ]
    return out


def expected(case: Case) -> dict[str, Any]:
    x, w, proj, target, dy_in = case.args
    eps = float(case.kwargs.get("eps", 1e-6))
    n = x.values.shape[-1]
    x2 = x.values.reshape(-1, n)
    rstd = 1.0 / np.sqrt(np.sum(x2 * x2, axis=1, keepdims=True) / n + eps)
    y = x2 * rstd * w.values[None, :]
    t2 = target.values.reshape(-1, proj.values.shape[1])
    upstream = t2 @ proj.values.T
    dy = dy_in.values.reshape(-1, n)
    p = rb.parts(x2, w.values, dy, eps)
    loss = float(np.sum((y @ proj.values) * t2))
    loss_tol = 4 * UNIT_ROUNDOFF[x.dtype] * float(np.sum(np.abs(y) * np.abs(upstream))) + 1e-9 * abs(loss)
    m = x2.shape[0]
    k_dx = 16 + 4 * np.log2(max(n, 2)) + n / 64
    k_dw = 16 + 4 * np.log2(max(m, 2)) + m / 16 + k_dx
    dy_slack, dw_slack = 0.0, 0.0  # dy is the case's own input: no rounding of the upstream gradient to allow
    return {
        "y": y.reshape(x.values.shape),
        "loss": np.array(loss),
        "loss_tol": loss_tol,
        "dx": p["dx"].reshape(x.values.shape),
        "dx_tol": (
            2 * UNIT_ROUNDOFF[x.dtype],
            (U32 * k_dx * p["dx_mag"] + dy_slack).reshape(x.values.shape) + 4 * TINY[x.dtype],
        ),
        "dw": p["dw"],
        "dw_tol": (2 * UNIT_ROUNDOFF[w.dtype], U32 * k_dw * p["dw_mag"] + dw_slack + 4 * TINY[w.dtype]),
        "y_tol": (
            2 * UNIT_ROUNDOFF[x.dtype],
            U32 * (32 + 4 * np.log2(max(n, 2)) + n / 64) * np.abs(y).reshape(x.values.shape)
            + 4 * TINY[x.dtype],
        ),
    }


def run_case(fn: Any, case_spec: dict, tools: Any) -> dict:
    import torch

    from tritonlab.grading import guards

    x0, w0, proj, target, dy = (tools.build_arg(a) for a in case_spec["args"])
    kwargs = {k: tools.build_arg(v) for k, v in case_spec.get("kwargs", {}).items()}
    rec = guards._ACTIVE
    with guards.paused():
        x = x0.detach().requires_grad_()
        w = w0.detach().requires_grad_()
    before = len(rec.launches) if rec is not None else 0
    y = fn(x, w, **kwargs)
    mid = len(rec.launches) if rec is not None else 0
    info: dict[str, Any] = {"fwd_launches": mid - before, "returned": type(y).__name__}
    if not isinstance(y, torch.Tensor):
        return {"json": info, "tensors": []}
    info["requires_grad"] = bool(y.requires_grad)
    info["grad_fn"] = type(y.grad_fn).__name__ if y.grad_fn is not None else None
    with guards.paused():
        loss = (
            (y.detach().double() @ proj) * target
        ).sum()  # the grader's arithmetic: reported, not replayed
    if not y.requires_grad:
        return {"json": info, "tensors": [y.detach()], "replay": [y.detach()]}
    # what loss.backward() would do, with the upstream gradient d loss / d y handed in as an input
    dx, dw = torch.autograd.grad(y, (x, w), grad_outputs=dy, allow_unused=True)
    info["bwd_launches"] = (len(rec.launches) if rec is not None else 0) - mid
    info["x_grad"] = dx is not None
    info["w_grad"] = dw is not None
    with guards.paused():
        zero = torch.zeros(0, dtype=torch.float64)
        tensors = [
            y.detach(),
            loss.reshape(1),
            dx if dx is not None else zero,
            dw if dw is not None else zero,
        ]
    return {"json": info, "tensors": tensors, "replay": [tensors[0], tensors[2], tensors[3]]}


def check(case: Case, result: dict) -> list[Failure]:
    x, w, _proj, _target, _dy = case.args
    exc = exception_failure(case, result)
    if exc is not None:
        cause = ""
        if "NotImplementedError" in exc.message:
            cause = "implement the Function's backward: it must return (dx, dw, None), computed by the Triton kernels"
        elif "does not require grad" in exc.message:
            cause = "the output must carry a grad_fn: return YourFunction.apply(x, weight, eps)"
        if cause and not exc.cause:
            exc = Failure(exc.case, exc.kind, exc.message, cause, exc.where)
        return [exc]
    data = result.get("data") or {}
    name = case.name
    fn = result.get("function", FUNCTION)
    if data.get("returned") != "Tensor":
        return [Failure(name, "wrong-result", f"{fn} returned {data.get('returned')}, expected a tensor", "")]
    if not data.get("fwd_launches"):
        return [
            Failure(
                name,
                "no-kernel-launch",
                f"{fn} launched no Triton kernel in the forward pass",
                "the forward of your autograd.Function must run the Triton forward kernel",
            )
        ]
    exp = expected(case)
    failures = compare_values(case, result, exp["y"], x.dtype, *exp["y_tol"], output_index=0, label="y")
    if not data.get("requires_grad"):
        failures.append(
            Failure(
                name,
                "wrong-result",
                f"the output of {fn} does not require grad, so the loss cannot be differentiated",
                "return `RMSNormFunction.apply(x, weight, eps)`: autograd records the call only through .apply",
            )
        )
        return failures
    if not data.get("bwd_launches"):
        failures.append(
            Failure(
                name,
                "no-kernel-launch",
                "loss.backward() ran without launching a Triton kernel: the gradients did not come from your "
                "backward kernels",
                "call the Triton backward (rms_norm_backward) inside the Function's backward",
            )
        )
    failures += compare_values(
        case, result, exp["loss"].reshape(1), "float64", 0.0, exp["loss_tol"], output_index=1, label="loss"
    )
    for idx, key, dtype, present in ((2, "dx", x.dtype, "x_grad"), (3, "dw", w.dtype, "w_grad")):
        what = "x.grad" if key == "dx" else "weight.grad"
        if not data.get(present):
            failures.append(
                Failure(
                    name,
                    "wrong-result",
                    f"{what} is None: the backward returned no gradient for it",
                    "backward must return one gradient per input of forward, in order: (dx, dw, None for eps)",
                )
            )
            continue
        failures += compare_values(
            case, result, exp[key], dtype, *exp[f"{key}_tol"], output_index=idx, label=what
        )
    return failures
