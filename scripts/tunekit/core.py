"""The records `scripts/tune_reference_kernels.py` works with (cases, implementations, sections) and the small
helpers the section plans share."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TCase:
    label: str
    group: str
    make: Callable[[], tuple[Any, ...]]
    reference: Callable[[tuple[Any, ...]], dict[str, Any]]
    flops: int
    nbytes: int
    spin_cycles: int = 200_000
    extra: tuple[Any, ...] = ()  # appended to the inputs when an implementation is called (attention: causal)


@dataclass
class Impl:
    name: str
    run: Callable[..., Any]
    extract: Callable[[Any, tuple[Any, ...]], dict[str, Any]]
    kind: str  # "peer", "variant" or "reference" (ours, another kernel: context, not a candidate)
    config: dict[str, Any] | None = None
    groups: frozenset[str] | None = None  # None: every group
    default_for: frozenset[str] = field(default_factory=frozenset)
    #: this implementation's own float64 reference, where it computes another function than the case's (a
    #: peer with coarser scales); None: the case's reference
    reference: Callable[[tuple[Any, ...]], dict[str, Any]] | None = None

    def applies(self, group: str) -> bool:
        return self.groups is None or group in self.groups


@dataclass
class Section:
    name: str
    cases: list[TCase]
    impls: list[Impl]
    share: float  # fraction of the budget this section may spend when every section runs
    describe: str = ""


def all_groups(cases: list[TCase]) -> list[str]:
    return list(dict.fromkeys(c.group for c in cases))


def cfg_name(cfg: dict[str, Any]) -> str:
    keys = [k for k in ("kernel", "BLOCK_M", "BLOCK_N", "BM", "BN", "BK", "BLOCK_M1", "BLOCK_N1") if k in cfg]
    return " ".join(str(cfg[k]) for k in keys) + f" w{cfg.get('num_warps')} s{cfg.get('num_stages')}"


def merge_defaults(impls: list[Impl]) -> list[Impl]:
    """One "default" entry per distinct default configuration (several groups may share one)."""
    merged: dict[str, Impl] = {}
    out: list[Impl] = []
    for impl in impls:
        if impl.default_for and impl.name in merged:
            first = merged[impl.name]
            first.groups = (first.groups or frozenset()) | (impl.groups or frozenset())
            first.default_for = first.default_for | impl.default_for
            continue
        if impl.default_for:
            merged[impl.name] = impl
        out.append(impl)
    return out


def geomean(values: list[float]) -> float:
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else math.nan
