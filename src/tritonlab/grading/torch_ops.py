"""Torch operations — the CHILD side: which aten ops the learner's host code ran (not inside a launch), each
classified as a copy of an argument (judged against the exercise's `[host]` policy), a computation (a torch
fallback) or harmless, with the learner's line that ran it, into the active `guards.Recorder`."""

from __future__ import annotations

from typing import Any

import torch

from tritonlab.grading import guards

_COPY_OPS = {"aten.clone", "aten.copy_", "aten._to_copy", "aten.contiguous"}
_HARMLESS = {
    "aten.fill_",
    "aten.zero_",
    "aten.empty",
    "aten.empty_like",
    "aten.empty_strided",
    "aten.zeros",
    "aten.zeros_like",
    "aten.ones",
    "aten.ones_like",
    "aten.full",
    "aten.full_like",
    "aten.eq",
    "aten.ne",
    "aten.lt",
    "aten.le",
    "aten.gt",
    "aten.ge",
    "aten.isnan",
    "aten.isinf",
    "aten.isfinite",
    "aten.any",
    "aten.all",
    "aten.is_nonzero",
    "aten._local_scalar_dense",
    "aten.equal",
    "aten.lift_fresh",
    "aten.scalar_tensor",
    "aten.arange",
}
_COMPUTE = {
    "aten.mm",
    "aten.bmm",
    "aten.addmm",
    "aten.matmul",
    "aten.linear",
    "aten.mv",
    "aten.dot",
    "aten.baddbmm",
    "aten.addmv",
    "aten._softmax",
    "aten._log_softmax",
    "aten.softmax",
    "aten.native_layer_norm",
    "aten._fused_rms_norm",
    "aten.rms_norm",
    "aten.cumsum",
    "aten.sort",
    "aten.topk",
    "aten.einsum",
    "aten._scaled_dot_product_flash_attention",
    "aten.index_put_",
    "aten.scatter",
    "aten.gather",
    "aten.index",
    "aten.index_select",
    "aten.cat",
    "aten.stack",
    "aten.flip",
    "aten.roll",
}


def classify_op(name: str, tags: tuple[str, ...]) -> str:
    """'copy', 'compute' or 'ok' for an aten op seen in the learner's host code."""
    if name in _COPY_OPS:
        return "copy"
    if name in _HARMLESS:
        return "ok"
    if name in _COMPUTE or "pointwise" in tags or "reduction" in tags:
        return "compute"
    return "ok"


def op_recorder() -> Any:
    """A TorchDispatchMode that records the aten ops the learner's host code runs (not inside launches)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpRecorder(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # torch wraps a mode's __torch_dispatch__ in _disable_dynamo, whose first call imports
            # torch._dynamo (1.5-2 s, in every run). This mode is never compiled: skip the wrapper.
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            kwargs = kwargs or {}
            rec = guards._ACTIVE
            if rec is None or rec.paused:
                return func(*args, **kwargs)
            name = str(func.overloadpacket)
            tags = tuple(str(t).removeprefix("Tag.") for t in func.tags)
            kind = classify_op(name, tags)
            result = func(*args, **kwargs)
            if kind == "copy":
                source = args[1] if name == "aten.copy_" else (args[0] if args else None)
                target = args[0] if name == "aten.copy_" else result
                arg = rec.input_name(source)
                if arg is not None and isinstance(target, torch.Tensor):
                    rec.host_copies.append(
                        {
                            "arg": arg,
                            "op": name,
                            "convert": target.dtype != source.dtype,
                            "bytes": int(source.numel() * source.element_size()),
                            "where": guards.learner_line(),
                        }
                    )
                    rec.trace.append(("copy", target, source))
                    return result
            elif name in ("aten.fill_", "aten.zero_") and args and isinstance(args[0], torch.Tensor):
                rec.trace.append(("fill", args[0], args[1] if len(args) > 1 else 0))
            if kind != "ok":
                rec.torch_ops.append(f"{kind}:{name}")
                rec.op_where.setdefault(name, guards.learner_line())
            return result

    return OpRecorder()
