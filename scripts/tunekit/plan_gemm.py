"""The GEMM sections of the tuning plan: the persistent TMA GEMM (bf16) and the block-scaled fp8 GEMM, on the
four shapes of `matmul` (the decode shape included), against cuBLAS, torch.compile (both modes) and every
torch._scaled_mm scaling."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tunekit.core import Impl, Section, TCase, cfg_name, merge_defaults

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
        # "host": descriptors built on the host (TensorDescriptor), "dev": in the kernel (tl.make_tensor_descriptor)
        ("128x256x64 w8 s3 epi2 ws dev", c(128, 256, 64, 8, 3, 2, flatten=True, warp_spec=True), large),
        ("128x256x64 w8 s3 epi2 host", c(128, 256, 64, 8, 3, 2, host_desc=True), large),
        ("128x256x64 w8 s4 epi2 flat host", c(128, 256, 64, 8, 4, 2, flatten=True, host_desc=True), large),
        (
            "128x256x64 w8 s3 epi1 ws host",
            c(128, 256, 64, 8, 3, 1, flatten=True, warp_spec=True, host_desc=True),
            large,
        ),
        ("128x256x64 w8 s3 epi2 dev", c(128, 256, 64, 8, 3, 2), large),
        # decode: the split-K path (tiles_n × SPLIT_K programs, 128 ≤ 132 SMs at N = 4096) and one pass, with
        # host and device descriptors (every device-descriptor candidate ran 22-24 TFLOP/s in H200 run
        # 2026-12-04 (f45fcbb), the host-descriptor `matmul` 29.7: a fixed cost of making descriptors per launch)
        ("16x128x128 w4 s4 sk4 dev", c(16, 128, 128, 4, 4, SPLIT_K=4), decode),
        ("16x128x256 w4 s3 sk4 host", c(16, 128, 256, 4, 3, SPLIT_K=4, host_desc=True), decode),
        ("16x128x256 w4 s4 sk2 host", c(16, 128, 256, 4, 4, SPLIT_K=2, host_desc=True), decode),
        ("16x256x128 w4 s3 sk8 host", c(16, 256, 128, 4, 3, SPLIT_K=8, host_desc=True), decode),
        ("16x128x128 w8 s6 sk4 host", c(16, 128, 128, 8, 6, SPLIT_K=4, host_desc=True), decode),
        ("16x64x256 w4 s4 host", c(16, 64, 256, 4, 4, host_desc=True), decode),
        ("16x32x128 w4 s8 host", c(16, 32, 128, 4, 8, host_desc=True), decode),
        ("16x64x256 w4 s4 dev", c(16, 64, 256, 4, 4), decode),
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
            "torch.compile max-autotune",
            lambda a, b: compiled("mm", "max-autotune-no-cudagraphs")(a, b),
            extract,
            "peer",
        ),
        Impl("matmul (host-descriptor kernel, shipped)", matmul.matmul, extract, "reference"),
    ]
    for group in ("large", "decode"):
        cfg = dict(matmul_tma.INTERPRETER_CONFIG if smoke else matmul_tma.CONFIGS[group])
        impls.append(
            Impl(
                f"default ({cfg_name(cfg)})",
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
        "gemm", cases, merge_defaults(impls), 0.12, "persistent TMA GEMM (matmul_tma), bf16, M·N·K"
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

    def c(bm: int, bn: int, w: int, s: int, per_sm: int = 1) -> dict[str, Any]:
        cfg = {"BM": bm, "BN": bn, "GROUP_M": 1 if bm <= 16 else 8, "num_warps": w, "num_stages": s}
        return cfg | ({"PER_SM": per_sm} if per_sm > 1 else {})

    large, decode = {"large"}, {"decode"}
    return [
        ("fp8 128x128 w8 s4", c(128, 128, 8, 4), large),
        ("fp8 64x256 w8 s3", c(64, 256, 8, 3), large),
        ("fp8 64x128 w4 s4", c(64, 128, 4, 4), large),
        ("fp8 128x64 w4 s4", c(128, 64, 4, 4), large),
        ("fp8 64x128 w4 s6", c(64, 128, 4, 6), large),
        # two one-warpgroup programs per SM (about 168 registers and 72-100 KB of shared memory each, so two fit):
        # one's promotion can run while the other's product is in the tensor cores
        ("fp8 64x128 w4 s3 2/SM", c(64, 128, 4, 3, 2), large),
        ("fp8 64x128 w4 s4 2/SM", c(64, 128, 4, 4, 2), large),
        ("fp8 128x64 w4 s4 2/SM", c(128, 64, 4, 4, 2), large),
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
        impls.append(Impl(f"default ({cfg_name(cfg)})", ours(cfg), extract, "variant", cfg, frozenset({group}),
                          frozenset({group})))  # fmt: skip
    for name, cfg, groups in _fp8_variants(smoke):
        impls.append(Impl(name, ours(cfg), extract, "variant", cfg, frozenset(groups) if groups else None))
    return Section(
        "fp8",
        cases,
        merge_defaults(impls),
        0.18,
        "block-scaled fp8 GEMM (e4m3, 1×128 / 128×128 scales), M·N·K",
    )
