"""Kernel launches — the CHILD side: count every launch of a `@triton.jit` kernel (compiled or interpreted,
autotuned or not) into the active `guards.Recorder`, pausing op recording while a kernel runs; and write the
launch record, the trace as plain data that a fresh child replays without the learner's module
(grading/replay/). A launch on a tensor whose contents the replay cannot restore is named
(`unknown_launch_tensor`)."""

from __future__ import annotations

import functools
from typing import Any

import torch

from tritonlab import i18n
from tritonlab.grading import guards
from tritonlab.grading.guards import Recorder, dtype_name


def _launch_record(fn_obj: Any, args: tuple, kwargs: dict, grid: Any) -> dict:
    names = list(getattr(fn_obj, "arg_names", []))
    bound = dict(zip(names, args, strict=False)) | dict(kwargs)
    try:
        g = grid(bound) if callable(grid) else grid
        g = tuple(int(v) for v in (g if isinstance(g, (tuple, list)) else (g,)))
    except Exception:
        g = ()
    consts = {
        k: v for k, v in bound.items() if isinstance(v, int) and not isinstance(v, bool) and k.isupper()
    }
    inner = getattr(fn_obj, "fn", None)
    name = getattr(inner, "__name__", None) or getattr(fn_obj, "__name__", "kernel")
    record = {"kernel": name, "grid": list(g), "constexprs": consts}
    where = guards.learner_line()
    if where:  # the launch's line, and the line that computed its grid (feedback for grid errors)
        from tritonlab.grading.where import grid_line

        record["where"], record["grid_where"] = where, grid_line(where)
    return record


def _wrap_run(run: Any) -> Any:
    @functools.wraps(run)
    def wrapper(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        rec = guards._ACTIVE
        if rec is None or warmup:
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)
        record = _launch_record(self, args, kwargs, grid)
        rec.launches.append(record)
        rec.trace.append(("launch", self, args, dict(kwargs), tuple(record["grid"])))
        rec.paused += 1
        try:
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            rec.paused -= 1

    wrapper.__tritonlab_original__ = run  # type: ignore[attr-defined]
    return wrapper


def _wrap_autotune(run: Any) -> Any:
    """An autotuned launch benchmarks every config before the real launch. A replay redoes the chosen config
    only: the trace keeps the final launch and the `reset_to_zero` fills that precede it; the benchmark runs,
    and the clones and copies of Triton's own `restore_value` hooks, are dropped. Hooks of the learner's own
    (`pre_hook`, `post_hook`, a config's `pre_hook`) are host code: they are noted and the case fails."""

    @functools.wraps(run)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        rec = guards._ACTIVE
        if rec is None or rec.paused:
            return run(self, *args, **kwargs)
        trace, copies, ops = len(rec.trace), len(rec.host_copies), len(rec.torch_ops)
        every = CHECK_CONFIGS and len(getattr(self, "configs", [])) > 1
        before = _states(args, kwargs) if every else []
        try:
            result = run(self, *args, **kwargs)
            if every:
                check_configs(self, rec, args, kwargs, before)
            return result
        finally:
            window = rec.trace[trace:]
            launches = [i for i, e in enumerate(window) if e[0] == "launch"]
            if launches:
                start = launches[-2] + 1 if len(launches) > 1 else 0
                rec.trace[trace:] = [
                    e for i, e in enumerate(window) if i >= start and (e[0] == "fill" or i == launches[-1])
                ]
            del rec.host_copies[copies:]
            del rec.torch_ops[ops:]
            user_hooks = getattr(self, "user_defined_pre_hook", False) or getattr(
                self, "user_defined_post_hook", False
            )
            if user_hooks or any(getattr(c, "pre_hook", None) for c in getattr(self, "configs", [])):
                inner = getattr(self, "base_fn", None)
                rec.host_hooks.append(getattr(inner, "__name__", "kernel"))

    wrapper.__tritonlab_original__ = run  # type: ignore[attr-defined]
    return wrapper


CHECK_CONFIGS = True  # harness.py turns it off for a contract that checks every config itself (autotune)


def _tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    return [t for t in (*args, *kwargs.values()) if isinstance(t, torch.Tensor) and t.numel()]


def _states(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    with guards.paused():
        return [t.clone() for t in _tensors(args, kwargs)]


def _config_name(config: Any) -> str:
    parts = [f"{k}={v}" for k, v in getattr(config, "kwargs", {}).items()]
    parts += [f"{a}={getattr(config, a)}" for a in ("num_warps", "num_stages") if getattr(config, a, None)]
    return ", ".join(parts) or "default"


def _far_apart(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Two configs' results differ by more than a different order of additions explains (1 % of the largest
    magnitude), or in NaN/Inf, or (integers, bools) at all."""
    if not (got.dtype.is_floating_point and want.dtype.is_floating_point):
        return not torch.equal(got, want)
    g, w = got.double(), want.double()
    if not torch.equal(torch.isnan(g), torch.isnan(w)) or not torch.equal(torch.isinf(g), torch.isinf(w)):
        return True
    finite = torch.isfinite(w)
    scale = float(w[finite].abs().max()) if bool(finite.any()) else 0.0
    return bool(((g - w).abs()[finite] > 1e-2 * scale + 1e-6).any())


def check_configs(tuner: Any, rec: Recorder, args: tuple, kwargs: dict, before: list[torch.Tensor]) -> None:
    """Every config of an autotuned launch, the ones `prune_configs_by` dropped included, must give the result
    the chosen config gave: each runs from the tensors' state before the tuned launch, and its results are
    compared with the chosen config's (a first-line check in the learner's process, like the thread check).
    The chosen config's results are put back afterwards; these runs are not recorded."""
    best = getattr(tuner, "best_config", None)
    tensors = _tensors(args, kwargs)
    if best is None or len(tensors) != len(before):
        return
    after = _states(args, kwargs)
    guards.activate(None)  # not the learner's launches: neither counted, recorded nor logged
    try:
        for config in list(tuner.configs):
            if config is best:
                continue
            for t, old in zip(tensors, before, strict=True):
                t.copy_(old)
            tuner.fn.run(*args, **kwargs, **config.all_kwargs())
            if any(_far_apart(t, want) for t, want in zip(tensors, after, strict=True)):
                inner = getattr(tuner, "base_fn", None)
                rec.config_mismatches.append(
                    {
                        "kernel": getattr(inner, "__name__", "kernel"),
                        "config": _config_name(config),
                        "chosen": _config_name(best),
                    }
                )
                break
    finally:
        for t, want in zip(tensors, after, strict=True):
            t.copy_(want)
        guards.activate(rec)


def install_launch_counter() -> None:
    """Count launches of @triton.jit kernels, compiled or interpreted (Triton 3.x)."""
    from triton.runtime.jit import JITFunction

    try:
        from triton.runtime.autotuner import Autotuner

        if not hasattr(Autotuner.run, "__tritonlab_original__"):
            Autotuner.run = _wrap_autotune(Autotuner.run)
    except ImportError:  # pragma: no cover - no autotuner in this Triton
        pass

    classes: list[type] = [JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:  # pragma: no cover - very old Triton
        pass
    for cls in classes:
        if not hasattr(cls.run, "__tritonlab_original__"):
            cls.run = _wrap_run(cls.run)


# ---- the launch record: what a fresh child replays without the learner's module (grading/replay/) ---------

RECORD_VERSION = 1


def _scalar_spec(value: Any) -> dict:
    """A launch's non-tensor argument as JSON (floats by their hex form, so they travel bit-exact)."""
    if value is None:
        return {"none": True}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, str) and len(value) <= 64:
        return {"str": value}
    if type(value).__name__ == "dtype" and type(value).__module__.startswith("triton"):
        return {"dtype": str(value)}  # `ACC=tl.float32` for a constexpr parameter: the replay checks the name
    inner = getattr(value, "value", None)  # tl.constexpr(...) around a plain value
    if type(value).__name__ == "constexpr" and not isinstance(inner, type(value)):
        return _scalar_spec(inner)
    return {"unsupported": type(value).__name__}


def launch_record(rec: Recorder, inputs: list[tuple], outputs: list[Any]) -> dict:
    """The recorded trace as plain data: buffers (each case input by label, each factory allocation with how it
    was initialised, each scratch tensor a layout copy made), then the events in order (launches with kernel
    name, concrete grid and argument specs; copies; fills), then the returned tensors as views of buffers.

    A tensor is (buffer index, dtype, storage offset, shape, strides) of a buffer's untyped storage. A tensor
    outside every buffer is written as {"unknown": ...}: the replay refuses it."""
    buffers: list[dict] = []
    index: dict[int, int] = {}

    def add(storage_ptr: int, spec: dict) -> int:
        index[storage_ptr] = len(buffers)
        buffers.append(spec)
        return index[storage_ptr]

    for label, _view, g, _snapshot in inputs:
        add(g.buffer.untyped_storage().data_ptr(), {"kind": "input", "label": label})
    for g in rec.allocations:
        add(
            g.buffer.untyped_storage().data_ptr(),
            {
                "kind": "alloc",
                "dtype": dtype_name(g.buffer.dtype),
                "numel": g.numel,
                "init": g.init if g.init is not None else "unknown",
            },
        )

    def tensor(t: torch.Tensor, scratch: bool = False) -> dict:
        if t.numel() == 0:
            return {"zero_size": True, "dtype": dtype_name(t.dtype), "shape": list(t.shape)}
        ptr = t.untyped_storage().data_ptr()
        if ptr not in index:
            if not scratch:
                return {"unknown": True}
            add(ptr, {"kind": "scratch", "nbytes": int(t.untyped_storage().nbytes())})
        return {
            "buf": index[ptr],
            "dtype": dtype_name(t.dtype),
            "offset": int(t.storage_offset()),
            "shape": [int(d) for d in t.shape],
            "stride": [int(s) for s in t.stride()],
        }

    def value(v: Any) -> dict:
        return {"tensor": tensor(v)} if isinstance(v, torch.Tensor) else _scalar_spec(v)

    events: list[dict] = []
    for event in rec.trace:
        if event[0] == "launch":
            _kind, fn, args, kwargs, grid = event
            inner = getattr(fn, "fn", None)
            events.append(
                {
                    "op": "launch",
                    "kernel": getattr(inner, "__name__", None) or getattr(fn, "__name__", "?"),
                    "grid": [int(g) for g in grid],
                    "args": [value(a) for a in args],
                    "kwargs": {str(k): value(v) for k, v in kwargs.items()},
                }
            )
        elif event[0] == "copy":
            source = tensor(event[2])
            events.append({"op": "copy", "dst": tensor(event[1], scratch=True), "src": source})
        elif event[0] == "fill":
            fill = event[2]
            fill = fill.item() if isinstance(fill, torch.Tensor) and fill.numel() == 1 else fill
            events.append({"op": "fill", "dst": tensor(event[1], scratch=True), "value": _scalar_spec(fill)})
    returned = [tensor(t) if isinstance(t, torch.Tensor) else {"unknown": True} for t in outputs]
    return {"version": RECORD_VERSION, "buffers": buffers, "events": events, "outputs": returned}


def unknown_launch_tensor(rec: Recorder) -> str:
    """A replay redoes launches on the same tensors, so each tensor a launch reads must be one whose contents
    the replay can restore: an argument, an allocation made by a torch factory during the call, or a layout
    copy of an argument. Anything else (a tensor made from numpy, the result of a torch op) could carry a
    precomputed answer. Returns a description of the first such tensor, or ""."""
    known = set(rec.inputs) | {g.buffer.untyped_storage().data_ptr() for g in rec.allocations}
    known |= {e[1].untyped_storage().data_ptr() for e in rec.trace if e[0] == "copy"}
    for number, event in enumerate((e for e in rec.trace if e[0] == "launch"), 1):
        _kind, fn, args, kwargs, _grid = event
        names = list(getattr(fn, "arg_names", []))
        for k, arg in enumerate([*args, *kwargs.values()]):
            if (
                isinstance(arg, torch.Tensor)
                and arg.numel()
                and arg.untyped_storage().data_ptr() not in known
            ):
                name = names[k] if k < len(names) else f"#{k}"
                return i18n.t("grader.launches_launch_number_got_name", number=number, name=name)
    return ""
