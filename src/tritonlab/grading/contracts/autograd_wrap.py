"""autograd-wrap (lesson 11): `swiglu(a, b)` = silu(a) · b is differentiable, its forward and backward computed
by two given Triton kernels (a fused SwiGLU) that the learner joins with a `torch.autograd.Function`:

    c = swiglu(a, b)                             a, b: (..., N), same shape and dtype, any layout;
                                                 fp16 / bf16 / fp32 / fp64
    da, db = torch.autograd.grad(c, (a, b), grad_outputs=dy)

dy (d loss / d c) is a case input, drawn by the parent, in c's dtype and in a layout of its own: transposed,
or one value broadcast to c's shape with stride 0 (what `c.sum().backward()` feeds a backward). The child
records c, da and db; the parent compares them with float64 values. Every case is replayed: the forward's and
the backward's launches, redone from a, b and dy alone, must give c, da and db (`REPLAY_OUTPUTS`), so a pass
cannot come from torch or numpy arithmetic on the host; torch compute ops in the learner's code fail as
`torch-fallback` (`host_checks`).

Two kinds of case do more, in the child, under `guards.paused()` (not the learner's recorded work; their
launches are cut from the record, as rmsnorm-backward's second call is):
- `gradcheck` (float64): `torch.autograd.gradcheck(swiglu, (a, b), fast_mode=True)` on fresh copies of the
  inputs. Only its failure counts (it can fail a case, never pass one): the float64 comparison in the parent
  is the proof, gradcheck's message is what a learner recognises.
- `compile` (GPU only): the same function under `torch.compile(fullgraph=True)` — a graph break, or a call the
  tracer cannot follow, raises — forward and backward on the same inputs; its c, da, db are returned after the
  eager ones and compared with the float64 values too.

Cost model: reads a, b (and dc, a, b in the backward), writes c (da, db): 3 + 5 tensors of the input's size.
Tolerance: each output's rounding plus fp32 (fp64) arithmetic error on the magnitudes of its terms, with room
for an approximate exp (`ex2.approx` on NVIDIA GPUs) that grows with |a|.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import TINY, UNIT_ROUNDOFF, Case, Tensor, cached, random_values
from tritonlab.grading.contracts.compare import compare_values, exception_failure, host_checks
from tritonlab.models import Failure

REPLAY = True
REPLAY_OUTPUTS = (0, 1, 2)  # c, da, db of the eager run; a compile case's second triple is not replayed

FUNCTION = "swiglu"
ARG_NAMES = ["a", "b", "dy"]
COMPILE_BACKEND = "aot_eager"  # traces forward and backward like Inductor, without generating code


def _case(
    rng: np.random.Generator,
    label: str,
    shape: tuple[int, ...],
    dtype: str,
    *,
    a_layout: str = "contiguous",
    b_layout: str = "contiguous",
    dy_layout: str = "contiguous",
    broadcast_dy: bool = False,
    scale: float = 2.0,
    gradcheck: bool = False,
    compile_: bool = False,
) -> Case:
    a = Tensor(random_values(rng, shape, dtype, scale), dtype, a_layout)
    b = Tensor(random_values(rng, shape, dtype), dtype, b_layout)
    dy_shape = (1,) * len(shape) if broadcast_dy else shape
    dy = Tensor(random_values(rng, dy_shape, dtype), dtype, dy_layout)
    dims = "×".join(str(d) for d in shape)
    where = "".join(
        f", {name} {lay}"
        for name, lay in (("a", a_layout), ("b", b_layout), ("dy", dy_layout))
        if lay != "contiguous"
    )
    name = f"{label}{dims} {dtype}{where}"
    extra: dict[str, Any] = {"bf16_arithmetic": True} if dtype == "bfloat16" else {}
    if broadcast_dy:
        extra["broadcast_dy"] = True
    if gradcheck:
        extra["gradcheck"] = True
    if compile_:
        extra["compile"] = True
    return Case(name, (a, b, dy), {}, extra=extra)


def cases(rng: np.random.Generator, backend: str) -> list[Case]:
    out = [
        _case(
            rng, "gradcheck: ", (2, 2, 3), "float64", gradcheck=True
        ),  # small: a failing gradcheck reruns slowly
        _case(rng, "", (1, 1), "float32"),
        _case(rng, "", (5, 33), "float32"),
        _case(rng, "batch × sequence: ", (2, 7, 40), "float32"),
        _case(rng, "", (int(rng.integers(3, 20)), int(rng.integers(10, 300))), "float32"),
        _case(rng, "a transposed: ", (24, 36), "float32", a_layout="transposed"),
        _case(rng, "row stride ≠ N: ", (9, 50), "float32", a_layout="padded", b_layout="padded"),
        _case(rng, "dy transposed: ", (20, 30), "float32", dy_layout="transposed"),
        _case(rng, "dy broadcast (c.sum().backward()): ", (3, 4, 16), "float32", broadcast_dy=True),
        _case(rng, "b strided: ", (6, 70), "float64", b_layout="strided"),
        _case(rng, "batch × sequence: ", (3, 5, 96), "float16"),
        _case(rng, "large |a|: ", (7, 300), "float16", scale=12.0),
        _case(rng, "", (6, 130), "bfloat16"),
    ]
    if backend == "gpu":
        out += [
            _case(rng, "large: ", (8, 512, 1024), "bfloat16"),
            _case(rng, "large: ", (4096, 768), "float32", a_layout="transposed"),
            _case(rng, "torch.compile(fullgraph=True): ", (4, 64, 256), "bfloat16", compile_=True),
        ]
    return out


def _expected(case: Case) -> dict[str, Any]:
    a_t, b_t, dy_t = case.args
    a, b = a_t.values, b_t.values
    dy = np.broadcast_to(dy_t.values, a.shape)
    sig = 1.0 / (1.0 + np.exp(-a))
    silu = a * sig
    bend = 1.0 + a * (1.0 - sig)
    dtype = a_t.dtype
    u = UNIT_ROUNDOFF["float64" if dtype == "float64" else "float32"]
    k = 32.0 + 8.0 * np.abs(a)  # a handful of operations, plus an approximate exp whose error grows with |a|
    out_r = 2 * UNIT_ROUNDOFF[dtype]
    tiny = 4 * TINY[dtype]
    return {
        "c": silu * b,
        "c_tol": (out_r, u * k * np.abs(silu * b) + tiny),
        "da": dy * b * sig * bend,
        "da_tol": (out_r, u * k * np.abs(dy * b) * sig * (1.0 + np.abs(a) * (1.0 - sig)) + tiny),
        "db": dy * silu,
        "db_tol": (out_r, u * k * np.abs(dy * silu) + tiny),
    }


def expected(case: Case) -> dict[str, Any]:
    return cached(case, "expected", lambda: _expected(case))


# ---- the child: run the learner's function (torch and the grading guards are imported here only) -----------


def _grad_or_empty(g: Any, like: Any) -> Any:
    import torch

    return g if g is not None else torch.zeros(0, dtype=like.dtype)


def _gradcheck(fn: Any, a0: Any, b0: Any) -> str:
    """ "" when torch.autograd.gradcheck passes on copies of the inputs, else its message (shortened)."""
    import torch

    a = a0.detach().clone().requires_grad_()
    b = b0.detach().clone().requires_grad_()
    try:
        torch.autograd.gradcheck(fn, (a, b), fast_mode=True)
    except Exception as exc:  # noqa: BLE001 - any failure of the learner's code is the message
        return f"{type(exc).__name__}: {exc}"[:600]
    return ""


def _compiled(fn: Any, a0: Any, b0: Any, dy: Any) -> tuple[list, str]:
    """c, da, db of fn under torch.compile(fullgraph=True), or the error that stopped it."""
    import torch

    a = a0.detach().clone().requires_grad_()
    b = b0.detach().clone().requires_grad_()
    try:
        import torch._dynamo

        torch._dynamo.reset()
        compiled = torch.compile(fn, fullgraph=True, backend=COMPILE_BACKEND)
        c = compiled(a, b)
        da, db = torch.autograd.grad(c, (a, b), grad_outputs=dy, allow_unused=True)
    except Exception as exc:  # noqa: BLE001 - a graph break or an untraceable call: the learner's to fix
        return [], f"{type(exc).__name__}: {exc}"[:600]
    return [c.detach(), _grad_or_empty(da, a), _grad_or_empty(db, b)], ""


def run_case(fn: Any, case_spec: dict, tools: Any) -> dict:
    import torch

    from tritonlab.grading import guards

    a0, b0, dy = (tools.build_arg(x) for x in case_spec["args"])
    extra = case_spec.get("extra", {})
    rec = guards._ACTIVE
    with guards.paused():
        a = a0.detach().requires_grad_()
        b = b0.detach().requires_grad_()
        if extra.get("broadcast_dy"):
            dy = dy.expand(a0.shape)  # one value for every element, stride 0: as c.sum().backward() gives
    before = len(rec.launches) if rec is not None else 0
    c = fn(a, b)
    mid = len(rec.launches) if rec is not None else 0
    info: dict[str, Any] = {"fwd_launches": mid - before, "returned": type(c).__name__}
    if not isinstance(c, torch.Tensor):
        return {"json": info, "tensors": []}
    info["requires_grad"] = bool(c.requires_grad)
    info["same_shape"] = tuple(c.shape) == tuple(a0.shape)
    if not c.requires_grad or not info["same_shape"]:  # judged from c alone: no gradient can be asked of it
        return {"json": info, "tensors": [c.detach()], "replay": [c.detach()]}
    da, db = torch.autograd.grad(c, (a, b), grad_outputs=dy, allow_unused=True)
    info["bwd_launches"] = (len(rec.launches) if rec is not None else 0) - mid
    info["a_grad"], info["b_grad"] = da is not None, db is not None
    with guards.paused():
        tensors = [c.detach(), _grad_or_empty(da, a0), _grad_or_empty(db, b0)]
    launches = len(rec.launches) if rec is not None else 0
    events = len(rec.trace) if rec is not None else 0
    with guards.paused():  # the grader's extra checks: not the learner's recorded work
        if extra.get("gradcheck"):
            info["gradcheck"] = _gradcheck(fn, a0, b0)
        if extra.get("compile"):
            more, error = _compiled(fn, a0, b0, dy)
            info["compile_error"] = error
            tensors += more
    if rec is not None:  # their launches are not replayed: the record keeps the eager call's
        del rec.launches[launches:]
        del rec.trace[events:]
    return {"json": info, "tensors": tensors, "replay": tensors[:3]}


# ---- the parent: judge one case ------------------------------------------------------------------------------


def _exception_cause(message: str) -> str:
    if "NotImplementedError" in message:
        return i18n.t("grader.autograd_wrap_write_function_s_forward")
    if "incorrect number of gradients" in message:
        return i18n.t("grader.autograd_wrap_backward_returns_exactly_one")
    if "does not require grad" in message:
        return i18n.t("grader.autograd_wrap_output_must_carry_grad")
    return ""


OUTPUTS = (("c", "c"), ("da", "a.grad"), ("db", "b.grad"))


def _compare(
    case: Case, result: dict, exp: dict, first: int, label: str, which: tuple[int, ...]
) -> list[Failure]:
    """Outputs `which` (0: c, 1: da, 2: db) of the triple that starts at returned output `first`."""
    dtype = case.args[0].dtype
    failures = []
    for k in which:
        key, what = OUTPUTS[k]
        failures += compare_values(
            case, result, exp[key], dtype, *exp[f"{key}_tol"], output_index=first + k, label=f"{label}{what}"
        )
    return failures


def _float64_cause(case: Case, failures: list[Failure]) -> list[Failure]:
    if case.args[0].dtype != "float64" or not any(f.kind == "wrong-result" for f in failures):
        return failures
    cause = i18n.t("grader.autograd_wrap_float64_case_computed_at")
    return [
        Failure(f.case, f.kind, f.message, f.cause or cause, f.where) if f.kind == "wrong-result" else f
        for f in failures
    ]


def check(case: Case, result: dict) -> list[Failure]:
    exc = exception_failure(case, result)
    if exc is not None:
        cause = _exception_cause(exc.message)
        return [Failure(exc.case, exc.kind, exc.message, exc.cause or cause, exc.where)]
    data = result.get("data") or {}
    name = case.name
    fn = result.get("function", FUNCTION)
    if data.get("returned") != "Tensor":
        return [
            Failure(
                name,
                "wrong-result",
                i18n.t(
                    "grader.autograd_wrap_fn_returned_returned_expected", fn=fn, returned=data.get("returned")
                ),
                "",
            )
        ]
    failures = host_checks(case, result, allow_copies=True, needs_launch=True)
    if not data.get("fwd_launches"):
        failures.append(
            Failure(
                name,
                "no-kernel-launch",
                i18n.t("grader.autograd_wrap_fn_b_launched_no", fn=fn),
                i18n.t("grader.autograd_wrap_function_s_forward_must"),
            )
        )
    exp = expected(case)
    failures += _compare(case, result, exp, 0, "", (0,))
    if data.get("same_shape") is False:
        return failures  # wrong-shape: c must come back with a's shape before gradients can flow into it
    if not data.get("requires_grad"):
        failures.append(
            Failure(
                name,
                "wrong-result",
                i18n.t("grader.autograd_wrap_output_fn_does_not", fn=fn),
                i18n.t("grader.autograd_wrap_return_swiglufunction_apply_b"),
            )
        )
        return failures
    if not data.get("bwd_launches"):
        failures.append(
            Failure(
                name,
                "no-kernel-launch",
                i18n.t("grader.autograd_wrap_backward_pass_ran_without"),
                i18n.t("grader.autograd_wrap_launch_swiglu_bwd_kernel"),
            )
        )
    for present, what in (("a_grad", "a.grad"), ("b_grad", "b.grad")):
        if not data.get(present):
            failures.append(
                Failure(
                    name,
                    "wrong-result",
                    i18n.t("grader.autograd_wrap_what_none_backward_returned", what=what),
                    i18n.t("grader.autograd_wrap_backward_returns_one_gradient"),
                )
            )
    if data.get("a_grad") and data.get("b_grad"):
        failures += _compare(case, result, exp, 0, "", (1, 2))
    if case.extra.get("gradcheck") and data.get("gradcheck"):
        failures.append(
            Failure(
                name,
                "wrong-result",
                i18n.t("grader.autograd_wrap_gradcheck_failed", error=data["gradcheck"]),
                i18n.t("grader.autograd_wrap_backward_s_gradients_differ"),
            )
        )
    if case.extra.get("compile"):
        if data.get("compile_error"):
            failures.append(
                Failure(
                    name,
                    "exception",
                    i18n.t(
                        "grader.autograd_wrap_torch_compile_fullgraph_true",
                        fn=fn,
                        compile_error=data["compile_error"],
                    ),
                    i18n.t("grader.autograd_wrap_fullgraph_true_turns_every"),
                )
            )
        else:
            failures += _compare(case, result, exp, 3, "compiled: ", (0, 1, 2))
    return _float64_cause(case, failures)
