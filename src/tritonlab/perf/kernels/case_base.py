"""The pieces every benchmark case module shares: dtypes by name, the Case record, fresh random inputs and the
``torch.compile`` of a registered peer function (``PEER_FNS``: the case modules add theirs)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "fp8e4m3": torch.float8_e4m3fn}

#: Peer functions by name, for :func:`compiled` (filled by the case modules).
PEER_FNS: dict[str, Callable[..., Any]] = {}


@functools.cache
def compiled(fn_name: str, mode: str | None = None) -> Callable[..., Any]:
    """``torch.compile`` of a registered peer function, created once per function and mode (static shapes;
    ``mode=None`` is the default mode)."""
    import torch._dynamo

    for knob in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 256)
    return torch.compile(PEER_FNS[fn_name], dynamic=False, mode=mode)


@dataclass
class Case:
    """One shape of one kernel, with its implementations and its counted bytes/FLOPs."""

    kernel: str
    dtype: str
    shape: tuple[int, ...]
    make: Callable[[], tuple[Any, ...]]
    ours: Callable[..., Any]
    peers: dict[str, Callable[..., Any]]
    nbytes: int
    nflops: int
    bound: str  # "memory" or "compute"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        causal = " causal" if self.extra.get("causal") else ""
        return f"{self.kernel} {self.dtype} {'x'.join(map(str, self.shape))}{causal}"


def rand(shape: tuple[int, ...], dtype: torch.dtype, device: str, scale: float = 1.0) -> torch.Tensor:
    """Fresh ``torch.randn`` values (never zeros) of ``shape``, drawn in fp32 and cast to ``dtype``."""
    return (torch.randn(shape, device=device, dtype=torch.float32) * scale).to(dtype)
