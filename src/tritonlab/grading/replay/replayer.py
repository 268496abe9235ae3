"""`Replayer`: one case's buffers re-created as its launch record says (each input from its `.npy`, each
allocation poisoned or filled with its constant, each scratch tensor zeroed) and its events replayed in order.
The record is hostile data (the check child ran learner code): every field is type-, size- and bound-checked
before use, and a record that cannot stand on its own is `Refused` with the reason the learner reads."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tritonlab.grading.replay import Refused
from tritonlab.grading.replay.lower import Pointer, lower
from tritonlab.grading.replay.trust import HostValues, covers
from tritonlab.i18n import t

# What a record may hold (the parent caps its size too).
MAX_BUFFERS = 256
MAX_EVENTS = 4096
MAX_ARGS = 64
MAX_DIMS = 8
MAX_ELEMENTS = 1 << 34
MAX_STR = 64


# `tl.dtype` launch arguments (`ACC=tl.float32` for a constexpr parameter), by Triton's name for each
TL_DTYPES = {"int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
TL_DTYPES |= {"fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64"}

LAUNCH_OPTIONS = {
    "num_warps",
    "num_stages",
    "num_ctas",
    "maxnreg",
    "enable_fp_fusion",
    "launch_cooperative_grid",
}


def _int(value: Any, what: str, low: int = 0, high: int = 1 << 62) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise Refused(t("grader.record_malformed", what=what))
    return value


def _list(value: Any, what: str, most: int) -> list:
    if not isinstance(value, list) or len(value) > most:
        raise Refused(t("grader.record_malformed", what=what))
    return value


def _dict(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise Refused(t("grader.record_malformed", what=what))
    return value


class Replayer:
    """Re-creates one case's buffers and replays its events. With `materialize` False it only checks the record
    and hands tensors as `Pointer`s: the lowering pass, which must run before any interpreted launch (the
    interpreter leaves triton.language patched after a kernel calls a library function such as `tl.sum`)."""

    def __init__(self, device: str, run_dir: Path, materialize: bool = True) -> None:
        self.device = device
        self.run_dir = run_dir
        self.materialize = materialize
        self.buffers: list[Any] = []  # torch tensors (1-D) whose untyped storage the specs point into
        # what the host may have chosen is judged when set (trust.HostValues: scalars, fills, constants)
        self.trust: HostValues | None = None
        self.allocs: dict[int, tuple[int, int, int]] = {}  # buffer index -> (interior numel, guard, itemsize)
        self.constants: dict[int, float] = {}  # buffer index -> the constant a factory filled it with
        self.launched: list[tuple] = []  # (kernel, args, kwargs, options) of each launch step made

    def build_buffers(self, record: dict, inputs: dict[str, Any]) -> None:
        import torch

        from tritonlab.grading import guards
        from tritonlab.grading.patterns import OUTPUT_GUARD, POISON

        for k, spec in enumerate(_list(record.get("buffers"), "buffers", MAX_BUFFERS)):
            spec = _dict(spec, "buffer")
            kind = spec.get("kind")
            if kind == "input":
                if spec.get("label") not in inputs:
                    raise Refused(t("grader.record_unknown_input"))
                self.buffers.append(inputs[spec["label"]])
            elif kind == "alloc":
                dtype = self._dtype(spec.get("dtype"))
                numel = _int(spec.get("numel"), "allocation size", 0, MAX_ELEMENTS)
                init = spec.get("init")
                poison = init == "poison"
                if not poison and not (isinstance(init, dict) and isinstance(init.get("bits"), int)):
                    # refused when a launch, copy, fill or output touches it (the grader's own snapshots, e.g.
                    # autotune's per-config copies, are allocations that none of them name)
                    self.buffers.append(None)
                    continue
                g = guards.guarded_empty(
                    numel, dtype, self.device, f"output #{k}", OUTPUT_GUARD, POISON if poison else None
                )
                if not poison and numel:
                    bits = guards._as_bits(g.interior)
                    width = bits.element_size() * 8
                    value = _int(init["bits"], "fill bits", -(1 << (width - 1)), (1 << width) - 1)
                    bits.fill_(value - (1 << width) if value >= 1 << (width - 1) and width > 8 else value)
                    self.constants[k] = g.interior[:1].double().item()  # judged when an event names it
                self.allocs[k] = (numel, g.guard, g.buffer.element_size())
                self.buffers.append(g.buffer)
            elif kind == "scratch":
                nbytes = _int(spec.get("nbytes"), "scratch size", 0, MAX_ELEMENTS)
                self.buffers.append(torch.zeros(nbytes, dtype=torch.uint8, device=self.device))
            else:
                raise Refused(t("grader.record_malformed", what="buffer kind"))

    def _dtype(self, name: Any) -> Any:
        from tritonlab.grading import guards

        if not isinstance(name, str) or name not in guards._TORCH_DTYPES:
            raise Refused(t("grader.record_malformed", what="dtype"))
        return guards.torch_dtype(name)

    def tensor(self, spec: Any) -> Any:
        import torch

        spec = _dict(spec, "tensor")
        if spec.get("unknown"):
            raise Refused(t("grader.record_foreign_tensor"))
        dtype = self._dtype(spec.get("dtype"))
        shape = [_int(d, "shape", 0, MAX_ELEMENTS) for d in _list(spec.get("shape"), "shape", MAX_DIMS)]
        if spec.get("zero_size"):
            if math.prod(shape) != 0:
                raise Refused(t("grader.record_malformed", what="zero-size tensor"))
            return torch.empty(shape, dtype=dtype, device=self.device)
        offset = _int(spec.get("offset"), "offset", 0, MAX_ELEMENTS)
        if not self.materialize:
            itemsize = torch.empty((), dtype=dtype).element_size()
            return Pointer(spec["dtype"], offset * itemsize % 16 == 0)
        buf = _int(spec.get("buf"), "buffer index", 0, len(self.buffers) - 1)
        if self.buffers[buf] is None:
            raise Refused(t("grader.record_alloc_lost"))
        if self.trust is not None and buf in self.constants:  # an allocation no event names cannot matter
            self.trust.check_constant(self.constants.pop(buf), t("grader.where_alloc", buf=buf))
        stride = [_int(s, "stride", 0, MAX_ELEMENTS) for s in _list(spec.get("stride"), "stride", MAX_DIMS)]
        if len(stride) != len(shape):
            raise Refused(t("grader.record_malformed", what="shape and strides"))
        storage = self.buffers[buf].untyped_storage()
        itemsize = torch.empty((), dtype=dtype).element_size()
        if math.prod(shape):
            last = offset + sum((d - 1) * s for d, s in zip(shape, stride, strict=True))
            if (last + 1) * itemsize > storage.nbytes():
                raise Refused(t("grader.record_malformed", what="a view outside its buffer"))
        return torch.empty(0, dtype=dtype, device=self.device).set_(storage, offset, shape, stride)

    def value(self, spec: Any) -> Any:
        spec = _dict(spec, "argument")
        if len(spec) != 1:
            raise Refused(t("grader.record_malformed", what="argument"))
        ((kind, raw),) = spec.items()
        if kind == "tensor":
            return self.tensor(raw)
        if kind == "none":
            return None
        if kind == "bool" and isinstance(raw, bool):
            return raw
        if kind == "int":
            return _int(raw, "integer argument", -(1 << 64), 1 << 64)
        if kind == "float" and isinstance(raw, str) and len(raw) <= MAX_STR:
            try:
                return float.fromhex(raw)
            except ValueError:
                pass
        if kind == "str" and isinstance(raw, str) and len(raw) <= MAX_STR:
            return raw
        if kind == "dtype" and isinstance(raw, str) and raw in TL_DTYPES:
            import triton.language as tl

            return tl.dtype(raw)
        if kind == "unsupported":
            raise Refused(t("grader.record_arg_type", type=str(raw)[:40]))
        raise Refused(t("grader.record_malformed", what="argument"))

    def run_events(self, record: dict, run_kernels: dict, lower_kernels: dict) -> None:
        if self.materialize:
            for step in self.steps(record, run_kernels, lower_kernels):
                step()
            return
        for event in _list(record.get("events"), "events", MAX_EVENTS):  # the lowering pass: launches only
            event = _dict(event, "event")
            if event.get("op") == "launch":
                name, _grid, args, kwargs, options = self.launch_arguments(event, lower_kernels)
                self.launched.append((name, args, kwargs, options))
                if self.device == "cpu":  # on a GPU the launch itself compiles for the real target
                    params = [p.name for p in lower_kernels[name].params]
                    lower(lower_kernels[name], dict(zip(params, args, strict=False)) | kwargs, options)

    def steps(self, record: dict, run_kernels: dict, lower_kernels: dict) -> list[Callable[[], Any]]:
        """The record's events as calls, in order (launches with the recorded grids, copies, fills), every
        argument decoded and checked before the first one runs: the replay runs them once, the speed timing
        (perf/speed.py) many times."""
        steps: list[Callable[[], Any]] = []
        for event in _list(record.get("events"), "events", MAX_EVENTS):
            event = _dict(event, "event")
            op = event.get("op")
            if op == "launch":
                name, grid, args, kwargs, options = self.launch_arguments(event, lower_kernels)
                self.launched.append((name, args, kwargs, options))
                steps.append(functools.partial(run_kernels[name][grid], *args, **kwargs, **options))
            elif op == "copy":
                steps.append(
                    functools.partial(self.tensor(event.get("dst")).copy_, self.tensor(event.get("src")))
                )
            elif op == "fill":
                dst, value = self.tensor(event.get("dst")), self.value(event.get("value"))
                if self.trust is not None:
                    self.check_fill(event.get("dst"), dst, value, len(steps) + 1)
                steps.append(functools.partial(dst.fill_, value))
            else:
                raise Refused(t("grader.record_malformed", what="event"))
        return steps

    def check_fill(self, spec: dict, dst: Any, value: Any, number: int) -> None:
        """A fill (`fill_`, `zero_`, `reset_to_zero`) sets a whole allocation to a value the policy allows."""
        assert self.trust is not None
        if not isinstance(value, (int, float)):
            raise Refused(t("grader.fill_type", number=number, type=type(value).__name__))
        self.trust.check_constant(float(value), t("grader.where_fill", number=number))
        where = self.allocs.get(spec.get("buf", -1)) if isinstance(spec, dict) else None
        if where is None or not covers(spec, where[0], where[1], where[2], dst.element_size()):
            raise Refused(t("grader.fill_partial", number=number))

    def launch_arguments(self, event: dict, lower_kernels: dict) -> tuple[str, tuple, list, dict, dict]:
        name = event.get("kernel")
        if not isinstance(name, str) or name not in lower_kernels:
            raise Refused(t("grader.launch_foreign_kernel", name=str(name)[:60]))
        grid = tuple(_int(g, "grid", 0, 1 << 31) for g in _list(event.get("grid"), "grid", 3))
        if not grid:
            raise Refused(t("grader.launch_no_grid"))
        args = [self.value(a) for a in _list(event.get("args"), "arguments", MAX_ARGS)]
        kwargs_raw = _dict(event.get("kwargs", {}), "keyword arguments")
        if len(kwargs_raw) > MAX_ARGS:
            raise Refused(t("grader.record_malformed", what="keyword arguments"))
        params = [p.name for p in lower_kernels[name].params]
        kwargs, options = {}, {}
        for key, spec in kwargs_raw.items():
            value = self.value(spec)
            if key in params:
                kwargs[key] = value
            elif key in LAUNCH_OPTIONS and isinstance(value, (int, bool)):
                options[key] = value
            else:
                raise Refused(t("grader.launch_bad_keyword", name=name, key=str(key)[:40]))
        if len(args) > len(params):
            raise Refused(t("grader.launch_too_many_args", name=name))
        if self.trust is not None:
            for key, value in [*zip(params, args, strict=False), *kwargs.items()]:
                if not isinstance(value, Pointer) and not hasattr(value, "data_ptr"):
                    self.trust.check_scalar(value, t("grader.where_arg", name=name, key=key))
        return name, grid, args, kwargs, options
