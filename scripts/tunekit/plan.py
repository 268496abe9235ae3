"""What `scripts/tune_reference_kernels.py` measures: per section the cases (shapes), the peers and our candidate
variants, in the order a short budget should spend its time (the most promising first).

A **case** makes fresh inputs and knows how to check an output against a float64 reference (for attention on
the first two heads, `selfcheck_compute._heads`). A **peer** is an implementation we are judged against (every
SDPA backend, cuBLAS, torch.compile, torch._scaled_mm); a **variant** is one launch configuration of ours, tied
to the configuration dict it would put in the kernel module's CONFIGS (`apply_to` says which case groups it
is a candidate for). The first variant of every group is the current default, so each run also re-measures
what is shipped.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SECTIONS = ("attention", "attention_bwd", "gemm", "fp8")


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


# ------------------------------------------------------------------ attention forward

ATTN_SHAPES = ((4, 32, 4096, 128), (4, 32, 4096, 64), (2, 32, 8192, 128), (1, 32, 16384, 128))
TINY_ATTN_SHAPES = ((1, 16, 64, 64), (1, 16, 64, 32))


def _attn_group(d: int, causal: bool) -> str:
    return f"hd{d} {'causal' if causal else 'full'}"


def _fwd_variants(smoke: bool) -> list[tuple[str, dict[str, Any], set[str] | None]]:
    """(name, config, groups): the forward's candidates, most promising first (None: every group)."""
    if smoke:
        t = {"kernel": "tma", "BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 4, "num_stages": 1}
        return [
            ("tma 32x16", t, None),
            ("tma 32x16 pipe", {**t, "pipe": True}, None),
            ("tma 32x16 reverse", {**t, "reverse": True}, {"hd64 causal", "hd32 causal"}),
            # an invalid launch (BLOCK_M not a multiple of BLOCK_N): the smoke run shows a failing variant is
            # recorded with its error and costs nothing else
            ("invalid 24x16", {**t, "BLOCK_M": 24}, None),
        ]
    h128 = {"hd128 full", "hd128 causal"}
    h64 = {"hd64 full", "hd64 causal"}
    causal = {"hd128 causal", "hd64 causal"}

    def tma(bm: int, bn: int, w: int, s: int, **flags: bool) -> dict[str, Any]:
        return {"kernel": "tma", "BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s, **flags}

    def ptr(bm: int, bn: int, w: int, s: int) -> dict[str, Any]:
        return {"kernel": "ptr", "BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s}

    return [
        ("tma 128x128 w8 s2", tma(128, 128, 8, 2), None),
        ("tma 128x64 w8 s3", tma(128, 64, 8, 3), h128),
        ("tma 128x64 w4 s3", tma(128, 64, 4, 3), h64),
        # four warpgroups share each K/V tile (half the shared-memory reads per FLOP of 128-row programs);
        # 127 registers, no spill for sm_90 on the CPU; 256x128 spills at hd 128, not at hd 64
        ("tma 256x64 w16 s2", tma(256, 64, 16, 2), None),
        ("tma 256x128 w16 s2", tma(256, 128, 16, 2), h64),
        ("tma 128x128 w8 s2 pipe", tma(128, 128, 8, 2, pipe=True), None),
        ("tma 128x64 w8 s3 pipe", tma(128, 64, 8, 3, pipe=True), h128),
        ("tma 128x128 w8 s2 ws", tma(128, 128, 8, 2, ws=True), None),
        ("tma 128x64 w8 s3 ws", tma(128, 64, 8, 3, ws=True), h128),
        ("tma 128x128 w8 s2 reverse", tma(128, 128, 8, 2, reverse=True), causal),
        ("tma 128x64 w8 s3 reverse", tma(128, 64, 8, 3, reverse=True), causal),
        ("tma 128x128 w8 s3", tma(128, 128, 8, 3), None),  # 230 KB of shared memory at hd 128: at the limit
        ("tma 128x128 w4 s3", tma(128, 128, 4, 3), h64),
        ("tma 64x64 w4 s4", tma(64, 64, 4, 4), h64),
        ("ptr 128x128 w8 s2", ptr(128, 128, 8, 2), None),
        ("ptr 128x64 w8 s4", ptr(128, 64, 8, 4), h128),
    ]


def attention_section(device: str, smoke: bool) -> Section:
    import torch

    from tritonlab.perf.kernels import attention as mod
    from tritonlab.perf.kernels import sdpa
    from tritonlab.perf.kernels.case_base import compiled, rand
    from tritonlab.perf.kernels.cases_compute import PEER_FNS  # noqa: F401 - registers "sdpa" for compiled()
    from tritonlab.perf.kernels.selfcheck_compute import _heads, _scores

    dt = torch.float16 if smoke else torch.bfloat16
    cases = []
    for b, h, s, d in TINY_ATTN_SHAPES if smoke else ATTN_SHAPES:
        for causal in (False, True):
            bs, hs = _heads(b, h, s)

            def reference(args, causal=causal, bs=bs, hs=hs):  # noqa: ANN001, ANN202
                q, k, v = args
                sc = _scores(q[bs, hs], k[bs, hs], causal)
                return {"o": torch.softmax(sc, -1) @ v[bs, hs].double(), "lse": torch.logsumexp(sc, -1) / 100}

            cases.append(
                TCase(
                    f"{b}x{h}x{s}x{d}{' causal' if causal else ''}",
                    _attn_group(d, causal),
                    lambda shape=(b, h, s, d): tuple(rand(shape, dt, device) for _ in range(3)),
                    reference,
                    mod.flops(b, h, s, d, causal),
                    mod.bytes_moved(b, h, s, d, dt.itemsize),
                    spin_cycles=1_000_000,
                    extra=(causal,),
                )
            )

    def on_heads(args):  # noqa: ANN001, ANN202
        b, h, s, _d = args[0].shape
        return _heads(b, h, s)

    def ours_extract(out, args):  # noqa: ANN001, ANN202
        bs, hs = on_heads(args)
        return {"o": out[0][bs, hs], "lse": out[1][bs, hs] / 100}

    def peer_extract(out, args):  # noqa: ANN001, ANN202
        bs, hs = on_heads(args)
        return {"o": out[bs, hs]}

    impls: list[Impl] = []
    for name in sdpa.PEER_NAMES:
        impls.append(Impl(name, _peer_fwd(sdpa, name), peer_extract, "peer"))
    impls.append(
        Impl("torch.compile", lambda q, k, v, causal: compiled("sdpa")(q, k, v, causal), peer_extract, "peer")
    )
    for group in _all_groups(cases):
        head_dim, causal_group = int(group.split()[0][2:]), group.endswith("causal")
        cfg = dict(mod.INTERPRETER_CONFIG if smoke else mod.default_config(head_dim, causal_group))
        impls.append(
            Impl(
                f"default ({_cfg_name(cfg)})",
                _ours_fwd(mod, cfg),
                ours_extract,
                "variant",
                cfg,
                frozenset({group}),
                frozenset({group}),
            )
        )
    for name, cfg, groups in _fwd_variants(smoke):
        impls.append(
            Impl(
                name, _ours_fwd(mod, cfg), ours_extract, "variant", cfg, frozenset(groups) if groups else None
            )
        )
    return Section("attention", cases, _merge_defaults(impls), 0.40, "attention forward, bf16, B·H·S·D")


def _all_groups(cases: list[TCase]) -> list[str]:
    return list(dict.fromkeys(c.group for c in cases))


def _cfg_name(cfg: dict[str, Any]) -> str:
    keys = [k for k in ("kernel", "BLOCK_M", "BLOCK_N", "BM", "BN", "BK", "BLOCK_M1", "BLOCK_N1") if k in cfg]
    return " ".join(str(cfg[k]) for k in keys) + f" w{cfg.get('num_warps')} s{cfg.get('num_stages')}"


def _merge_defaults(impls: list[Impl]) -> list[Impl]:
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


class _peer_fwd:  # noqa: N801 - used like a function
    """SDPA backend ``name`` as fn(q, k, v, causal); the default call also says which backend it picked."""

    def __init__(self, sdpa: Any, name: str) -> None:
        self.sdpa, self.name = sdpa, name
        if name == "sdpa_default":
            self.describe = lambda q, k, v, causal: {"backend": sdpa.default_backend(q, k, v, causal)}

    def __call__(self, q, k, v, causal):  # noqa: ANN001, ANN204
        return self.sdpa.run_backend(self.name, q, k, v, causal)


def _ours_fwd(mod: Any, cfg: dict[str, Any]) -> Callable[..., Any]:
    return lambda q, k, v, causal: mod.attention(q, k, v, causal, config=cfg)


# ------------------------------------------------------------------ attention backward


def _bwd_variants(smoke: bool) -> list[tuple[str, dict[str, Any], set[str] | None]]:
    if smoke:
        t = {"BLOCK_M1": 16, "BLOCK_N1": 32, "BLOCK_M2": 32, "BLOCK_N2": 16, "num_warps": 4, "num_stages": 1}
        return [
            ("bwd 16x32/32x16 fused", {**t, "fused": True}, None),
            ("bwd atomic", {**t, "atomic_dq": True}, None),
        ]
    h128 = {"hd128 full", "hd128 causal"}
    h64 = {"hd64 full", "hd64 causal"}

    def cfg(m1: int, n1: int, m2: int, n2: int, w: int, s: int, **more: Any) -> dict[str, Any]:
        return {"BLOCK_M1": m1, "BLOCK_N1": n1, "BLOCK_M2": m2, "BLOCK_N2": n2, "num_warps": w, "num_stages": s,
                **more}  # fmt: skip

    return [
        ("fused 32x128/128x64 w8 s2", cfg(32, 128, 128, 64, 8, 2, fused=True), h128),
        ("fused 64x128/128x64 w8 s2", cfg(64, 128, 128, 64, 8, 2, fused=True), h64),
        ("atomic dq 32x128 w8 s2", cfg(32, 128, 128, 64, 8, 2, atomic_dq=True), h128),
        ("atomic dq 64x128 w8 s2", cfg(64, 128, 128, 64, 8, 2, atomic_dq=True), h64),
        ("64x128/128x64 w8 s2", cfg(64, 128, 128, 64, 8, 2), h128),
        ("32x128/128x64 w8 s3", cfg(32, 128, 128, 64, 8, 3), None),
        ("64x64/64x64 w4 s2", cfg(64, 64, 64, 64, 4, 2), None),
        ("32x64/64x32 w4 s3", cfg(32, 64, 64, 32, 4, 3), None),
        ("16x128/128x32 w8 s2", cfg(16, 128, 128, 32, 8, 2), h128),
        ("64x64/128x64 w8 s2", cfg(64, 64, 128, 64, 8, 2), None),
        ("fused 64x64/64x64 w4 s2", cfg(64, 64, 64, 64, 4, 2, fused=True), None),
    ]


def attention_bwd_section(device: str, smoke: bool) -> Section:
    import torch

    from tritonlab.perf.kernels import attention as fwd
    from tritonlab.perf.kernels import attention_backward as mod
    from tritonlab.perf.kernels import sdpa
    from tritonlab.perf.kernels.case_base import compiled, rand
    from tritonlab.perf.kernels.cases_compute import PEER_FNS  # noqa: F401 - registers "sdpa"
    from tritonlab.perf.kernels.selfcheck_compute import _heads

    dt = torch.float16 if smoke else torch.bfloat16
    cases = []
    for b, h, s, d in TINY_ATTN_SHAPES if smoke else ATTN_SHAPES:
        for causal in (False, True):
            bs, hs = _heads(b, h, s)

            def make(shape=(b, h, s, d), causal=causal):  # noqa: ANN001, ANN202
                q, k, v, do = (rand(shape, dt, device) for _ in range(4))
                o, lse = fwd.attention(q, k, v, causal)
                return q, k, v, o, lse, do

            def reference(args, causal=causal, bs=bs, hs=hs, d=d):  # noqa: ANN001, ANN202
                q, k, v, _o, _lse, do = args
                _, dq, dk, dv = sdpa.reference_grads(
                    q[bs, hs], k[bs, hs], v[bs, hs], do[bs, hs], causal, d**-0.5
                )
                return {"dq": dq, "dk": dk, "dv": dv}

            cases.append(
                TCase(
                    f"{b}x{h}x{s}x{d}{' causal' if causal else ''}",
                    _attn_group(d, causal),
                    make,
                    reference,
                    mod.flops(b, h, s, d, causal),
                    mod.bytes_moved(b, h, s, d, dt.itemsize),
                    spin_cycles=1_000_000,
                    extra=(causal,),
                )
            )

    def extract(out, args):  # noqa: ANN001, ANN202
        b, h, s, _d = args[0].shape
        bs, hs = _heads(b, h, s)
        return {"dq": out[0][bs, hs], "dk": out[1][bs, hs], "dv": out[2][bs, hs]}

    impls: list[Impl] = []
    for name in sdpa.PEER_NAMES:
        impls.append(Impl(name, _BackwardPeers(sdpa, name, None), extract, "peer"))
    impls.append(Impl("torch.compile", _BackwardPeers(sdpa, "torch.compile", compiled), extract, "peer"))
    for group in _all_groups(cases):
        cfg = dict(
            mod.INTERPRETER_CONFIG if smoke else mod.CONFIGS.get(int(group.split()[0][2:]), mod.CONFIGS[64])
        )
        impls.append(
            Impl(
                f"default ({_cfg_name(cfg)})",
                _ours_bwd(mod, cfg),
                extract,
                "variant",
                cfg,
                frozenset({group}),
                frozenset({group}),
            )  # fmt: skip
        )
    for name, cfg, groups in _bwd_variants(smoke):
        impls.append(
            Impl(name, _ours_bwd(mod, cfg), extract, "variant", cfg, frozenset(groups) if groups else None)
        )
    return Section("attention_bwd", cases, _merge_defaults(impls), 0.30, "attention backward, bf16")


class _BackwardPeers:
    """One sdpa.BackwardPeer per causal setting, called like our backward: fn(q, k, v, o, lse, do, causal)."""

    def __init__(self, sdpa: Any, name: str, compiled: Any) -> None:
        self.sdpa, self.name, self.compiled = sdpa, name, compiled
        self.peers: dict[bool, Any] = {}

    def __call__(self, q, k, v, o, lse, do, causal):  # noqa: ANN001, ANN204
        peer = self.peers.get(causal)
        if peer is None:
            forward = None
            if self.compiled is not None:
                forward = lambda q, k, v: self.compiled("sdpa")(q, k, v, causal)  # noqa: E731
            peer = self.peers[causal] = self.sdpa.BackwardPeer(self.name, causal, forward)
        return peer(q, k, v, o, lse, do)

    def release(self) -> None:
        for peer in self.peers.values():
            peer.release()

    def describe(self, q, k, v, o, lse, do, causal) -> dict[str, Any]:  # noqa: ANN001
        if self.name == "sdpa_default":
            return {"backend": self.sdpa.default_backend(q, k, v, causal)}
        return {}


def _ours_bwd(mod: Any, cfg: dict[str, Any]) -> Callable[..., Any]:
    return lambda q, k, v, o, lse, do, causal: mod.attention_backward(q, k, v, o, lse, do, causal, config=cfg)


# ------------------------------------------------------------------ GEMMs

GEMM_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 11008, 4096), (16, 4096, 4096))
TINY_GEMM_SHAPES = ((128, 64, 64), (16, 64, 128))


def _gemm_group(m: int) -> str:
    return "decode" if m <= 64 else "large"


def _gemm_variants(smoke: bool) -> list[tuple[str, dict[str, Any], set[str] | None]]:
    if smoke:
        return [("32x32x32 flat", {"BM": 32, "BN": 32, "BK": 32, "GROUP_M": 2, "num_warps": 4, "num_stages": 1,
                                   "EPI_SPLIT": 2, "flatten": True}, {"large"})]  # fmt: skip

    def c(bm: int, bn: int, bk: int, w: int, s: int, epi: int = 1, **more: Any) -> dict[str, Any]:
        return {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 1 if bm <= 16 else 8, "num_warps": w, "num_stages": s,
                "EPI_SPLIT": epi, **more}  # fmt: skip

    large, decode = {"large"}, {"decode"}
    return [
        ("128x256x64 w8 s3 epi2 ws", c(128, 256, 64, 8, 3, 2, flatten=True, warp_spec=True), large),
        ("128x256x64 w8 s3 epi2", c(128, 256, 64, 8, 3, 2), large),
        ("128x256x64 w8 s4 epi2 flat", c(128, 256, 64, 8, 4, 2, flatten=True), large),
        ("256x128x64 w8 s3 epi2 flat", c(256, 128, 64, 8, 3, 2, flatten=True), large),
        ("128x128x64 w8 s4 epi2 flat", c(128, 128, 64, 8, 4, 2, flatten=True), large),
        ("128x128x64 w4 s4", c(128, 128, 64, 4, 4), large),
        ("16x64x256 w4 s4", c(16, 64, 256, 4, 4), decode),
        ("16x64x128 w4 s6", c(16, 64, 128, 4, 6), decode),
        ("16x32x128 w4 s8", c(16, 32, 128, 4, 8), decode),
        ("64x32x256 w4 s4", c(64, 32, 256, 4, 4), decode),
    ]


def gemm_section(device: str, smoke: bool) -> Section:
    import torch

    from tritonlab.perf.kernels import matmul, matmul_tma
    from tritonlab.perf.kernels.case_base import compiled, rand
    from tritonlab.perf.kernels.cases_compute import PEER_FNS  # noqa: F401 - registers "mm"

    dt = torch.float16 if smoke else torch.bfloat16
    cases = []
    for m, n, k in TINY_GEMM_SHAPES if smoke else GEMM_SHAPES:
        cases.append(
            TCase(
                f"{m}x{n}x{k}",
                _gemm_group(m),
                lambda m=m, n=n, k=k: (rand((m, k), dt, device), rand((k, n), dt, device, k**-0.5)),
                lambda args: {"c": args[0].double() @ args[1].double()},
                matmul_tma.flops(m, n, k),
                matmul_tma.bytes_moved(m, n, k, dt.itemsize),
            )
        )

    def extract(out, args):  # noqa: ANN001, ANN202
        return {"c": out}

    impls = [
        Impl("cuBLAS", torch.matmul, extract, "peer"),
        Impl("torch.compile", lambda a, b: compiled("mm")(a, b), extract, "peer"),
        Impl(
            "torch.compile max-autotune", lambda a, b: compiled("mm", "max-autotune")(a, b), extract, "peer"
        ),
        Impl("matmul (host-descriptor kernel, shipped)", matmul.matmul, extract, "reference"),
    ]
    for group in ("large", "decode"):
        cfg = dict(matmul_tma.INTERPRETER_CONFIG if smoke else matmul_tma.CONFIGS[group])
        impls.append(
            Impl(
                f"default ({_cfg_name(cfg)})",
                _mm(matmul_tma, cfg),
                extract,
                "variant",
                cfg,
                frozenset({group}),
                frozenset({group}),
            )  # fmt: skip
        )
    for name, cfg, groups in _gemm_variants(smoke):
        impls.append(
            Impl(name, _mm(matmul_tma, cfg), extract, "variant", cfg, frozenset(groups) if groups else None)
        )
    return Section(
        "gemm", cases, _merge_defaults(impls), 0.12, "persistent TMA GEMM (matmul_tma), bf16, M·N·K"
    )


def _mm(mod: Any, cfg: dict[str, Any]) -> Callable[..., Any]:
    def run(a, b):  # noqa: ANN001, ANN202
        out = torch_full_nan(a, b)
        return mod.matmul_tma(a, b, out=out, config=cfg)

    return run


def torch_full_nan(a: Any, b: Any) -> Any:
    import torch

    return torch.full((a.shape[0], b.shape[1]), float("nan"), device=a.device, dtype=a.dtype)


# ------------------------------------------------------------------ fp8


def _fp8_variants(smoke: bool) -> list[tuple[str, dict[str, Any], set[str] | None]]:
    if smoke:
        return [("fp8 32x64", {"BM": 32, "BN": 64, "GROUP_M": 2, "num_warps": 4, "num_stages": 1}, None)]

    def c(bm: int, bn: int, w: int, s: int) -> dict[str, Any]:
        return {"BM": bm, "BN": bn, "GROUP_M": 1 if bm <= 16 else 8, "num_warps": w, "num_stages": s}

    large, decode = {"large"}, {"decode"}
    return [
        ("fp8 128x128 w8 s4", c(128, 128, 8, 4), large),
        ("fp8 64x256 w8 s3", c(64, 256, 8, 3), large),
        ("fp8 64x128 w4 s4", c(64, 128, 4, 4), large),
        ("fp8 128x64 w4 s4", c(128, 64, 4, 4), large),
        ("fp8 64x128 w4 s6", c(64, 128, 4, 6), large),
        ("fp8 16x128 w4 s4", c(16, 128, 4, 4), decode),
        ("fp8 16x32 w4 s6", c(16, 32, 4, 6), decode),
        ("fp8 64x64 w4 s4", c(64, 64, 4, 4), decode),
    ]


def fp8_section(device: str, smoke: bool) -> Section:
    import torch

    from tritonlab.perf.kernels import matmul_fp8 as mod
    from tritonlab.perf.kernels.case_base import compiled
    from tritonlab.perf.kernels.cases_compute import ScaledMM, fp8_inputs

    cases = []
    for m, n, k in ((128, 128, 256), (16, 128, 256)) if smoke else GEMM_SHAPES:
        cases.append(
            TCase(
                f"{m}x{n}x{k}",
                _gemm_group(m),
                lambda m=m, n=n, k=k: fp8_inputs(m, n, k, device),
                lambda args: {
                    "c": mod.dequantize(args[0], args[1], 1) @ mod.dequantize(args[2], args[3], 128).t()
                },
                mod.flops(m, n, k),
                mod.bytes_moved(m, n, k),
            )
        )

    def extract(out, args):  # noqa: ANN001, ANN202
        return {"c": out}

    def ours(cfg: dict[str, Any]) -> Callable[..., Any]:
        def run(a, sa, w, sw):  # noqa: ANN001, ANN202
            out = torch.full((a.shape[0], w.shape[0]), float("nan"), device=a.device, dtype=torch.bfloat16)
            return mod.matmul_fp8(a, sa, w, sw, out=out, config=cfg)

        return run

    def coarse_reference(scaling: str) -> Callable[[tuple[Any, ...]], dict[str, Any]]:
        def ref(args):  # noqa: ANN001, ANN202 - what ScaledMM computes: a's first block scale per row, w's 1
            a, sa, w, _sw = args
            row = sa[:, :1].double() if scaling == "rowwise" else 1.0
            return {"c": (a.double() * row) @ w.double().t()}

        return ref

    impls = [
        Impl("scaled_mm blockwise", ScaledMM("blockwise"), extract, "peer"),
        Impl(
            "scaled_mm rowwise", ScaledMM("rowwise"), extract, "peer", reference=coarse_reference("rowwise")
        ),
        Impl(
            "scaled_mm tensorwise",
            ScaledMM("tensorwise"),
            extract,
            "peer",
            reference=coarse_reference("tensorwise"),
        ),
        Impl(
            "torch.compile",
            lambda a, sa, w, sw: compiled("fp8_dequantized_mm")(a, sa, w, sw),
            extract,
            "peer",
        ),
    ]
    for group in ("large", "decode"):
        cfg = dict(mod.INTERPRETER_CONFIG if smoke else mod.CONFIGS[group])
        impls.append(Impl(f"default ({_cfg_name(cfg)})", ours(cfg), extract, "variant", cfg, frozenset({group}),
                          frozenset({group})))  # fmt: skip
    for name, cfg, groups in _fp8_variants(smoke):
        impls.append(Impl(name, ours(cfg), extract, "variant", cfg, frozenset(groups) if groups else None))
    return Section(
        "fp8",
        cases,
        _merge_defaults(impls),
        0.18,
        "block-scaled fp8 GEMM (e4m3, 1×128 / 128×128 scales), M·N·K",
    )


BUILD = {"attention": attention_section, "attention_bwd": attention_bwd_section, "gemm": gemm_section,
         "fp8": fp8_section}  # fmt: skip

#: Which peers compute exactly our function with the same inputs (the rest are stricter bars: coarser scales).
PEER_NOTES = {
    "scaled_mm rowwise": "coarser scales than ours (one per row / column): a stricter bar",
    "scaled_mm tensorwise": "one scale per tensor: a stricter bar",
    "torch.compile max-autotune": "timed only where the warm-up processes finished autotuning within the budget",
}


def geomean(values: list[float]) -> float:
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else math.nan
