"""The attention sections of the tuning plan: the forward and the backward, on issue 38's B·H·S·D table (causal
and full), against every SDPA backend, the default call (with its pick) and torch.compile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tunekit.core import Impl, Section, TCase, all_groups, cfg_name, merge_defaults

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
        ("tma 128x128 w8 s2 lpt", tma(128, 128, 8, 2, lpt=True), causal),
        ("tma 128x128 w8 s3", tma(128, 128, 8, 3), None),  # 230 KB of shared memory at hd 128: at the limit
        ("tma 128x128 w4 s3", tma(128, 128, 4, 3), h64),
        ("tma 64x64 w4 s4", tma(64, 64, 4, 4), h64),
        # one warpgroup per program and at most ~115 KB of shared memory: two programs share an SM at hd 128
        # (138-151 registers, no spill, compiled for sm_90 with Triton 3.6). Each waits for its own products
        # (every wgmma wait is wait_group 0), so only a second program lets an SM run exponentials beside them
        ("tma 64x64 w4 s2", tma(64, 64, 4, 2), h128),
        ("tma 64x64 w4 s3", tma(64, 64, 4, 3), h128),
        ("tma 64x32 w4 s4", tma(64, 32, 4, 4), h128),
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
    for group in all_groups(cases):
        head_dim, causal_group = int(group.split()[0][2:]), group.endswith("causal")
        cfg = dict(mod.INTERPRETER_CONFIG if smoke else mod.default_config(head_dim, causal_group))
        impls.append(
            Impl(
                f"default ({cfg_name(cfg)})",
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
    return Section("attention", cases, merge_defaults(impls), 0.40, "attention forward, bf16, B·H·S·D")


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
            ("bwd tma dq", {**t, "atomic_dq": True, "tma_dq": True}, None),
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
        # dq added tile by tile by the TMA unit (FlashAttention-3's way): five products per block pair, one pass;
        # compiled for sm_90 with Triton 3.6 these hold 217-255 registers without spills
        ("tma dq 32x128 w8 s2", cfg(32, 128, 128, 64, 8, 2, atomic_dq=True, tma_dq=True), h128),
        ("tma dq 64x128 w8 s2", cfg(64, 128, 128, 64, 8, 2, atomic_dq=True, tma_dq=True), None),
        ("tma dq 32x64 w4 s3", cfg(32, 64, 64, 32, 4, 3, atomic_dq=True, tma_dq=True), h64),
        ("64x128/128x64 w8 s2", cfg(64, 128, 128, 64, 8, 2), h128),
        ("32x128/128x64 w8 s3", cfg(32, 128, 128, 64, 8, 3), None),
        ("64x64/64x64 w4 s2", cfg(64, 64, 64, 64, 4, 2), None),
        ("32x64/64x32 w4 s3", cfg(32, 64, 64, 32, 4, 3), None),
        ("16x128/128x32 w8 s2", cfg(16, 128, 128, 32, 8, 2), h128),
        ("64x64/128x64 w8 s2", cfg(64, 64, 128, 64, 8, 2), None),
        ("fused 64x64/64x64 w4 s2", cfg(64, 64, 64, 64, 4, 2, fused=True), None),
        # compiled for sm_90 with Triton 3.6 (the GPU's) the one above spills 20-24 bytes at hd 128 (255 registers);
        # these two hold 198-243 registers without spills
        ("fused 64x64/64x64 w8 s2", cfg(64, 64, 64, 64, 8, 2, fused=True), h128),
        ("fused 32x64/64x64 w4 s2", cfg(32, 64, 64, 64, 4, 2, fused=True), h128),
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
    for group in all_groups(cases):
        cfg = dict(
            mod.INTERPRETER_CONFIG if smoke else mod.CONFIGS.get(int(group.split()[0][2:]), mod.CONFIGS[64])
        )
        impls.append(
            Impl(
                f"default ({cfg_name(cfg)})",
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
    return Section("attention_bwd", cases, merge_defaults(impls), 0.30, "attention backward, bf16")


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
