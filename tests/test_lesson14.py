"""Lesson 14's claims, checked: what its kernels compile to for sm_90 (no GPU: Triton's compiler and the ptxas
it ships, through grading/kernel_inspect.py like `tritonlab inspect`), the rules the interpreter enforces on
tensor descriptors, the fp8 error budget the text quotes, and that the lesson's code does not pass the
exercises when pasted as the answer.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "course" / "14-hopper"
TEXT = (LESSON / "lesson.en.md").read_text(encoding="utf-8")
FENCE = re.compile(r"```python([^\n]*)\n(.*?)```", re.S)


def lesson_blocks(runnable_only: bool = True) -> list[str]:
    return [code for info, code in FENCE.findall(TEXT) if not (runnable_only and "raises=" in info)]


def jit_defs(source: str) -> str:
    """The @triton.jit function definitions of a source text, decorators kept, nothing else."""
    tree = ast.parse(source)
    keep = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in n.decorator_list)
    ]
    return "\n\n".join(ast.unparse(n) for n in keep)


# Compiled in a child with the interpreter off (a fresh process: the kernels must be real JITFunctions).
COMPILE = r"""
import json, re, sys
import triton
import triton.language as tl
from tritonlab.grading import kernel_compile as kc
from tritonlab.grading import triton_api

import importlib.util
spec = importlib.util.spec_from_file_location("lesson14_kernels", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)  # Triton reads each kernel's source from this file
namespace = vars(module)
out = {"triton": triton.__version__}

def compile_one(label, name, signature, constexprs, options, target="cuda:90"):
    fn = namespace[name]
    names = triton_api.parameter_names(fn)
    sig = dict(signature) | {k: "constexpr" for k in constexprs}
    cx = {(names.index(k),): v for k, v in constexprs.items()}
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n, t in sig.items() if t.startswith("*") or n.startswith("stride")}
    compiled = kc.compile_for(fn, sig, cx, attrs, options, target)
    d = kc.describe_compiled(compiled, target)
    ptx = d["stages"].get("ptx", "")
    out[label] = {"registers": d["resources"].get("registers"), **d["features"],
                  "wgmma_e4m3": len(re.findall(r"wgmma\.mma_async\S*e4m3", ptx))}

scale = {"x_ptr": "*fp16", "y_ptr": "*fp16", "M": "i32", "N": "i32", "stride_xm": "i32", "stride_ym": "i32", "alpha": "fp32"}
compile_one("pointer_copy", "persistent_scale_kernel", scale, {"BLOCK_M": 128, "BLOCK_N": 128, "GROUP_M": 8}, {"num_warps": 4})
compile_one("tma_copy", "tma_scale_kernel", scale, {"BLOCK_M": 128, "BLOCK_N": 128}, {"num_warps": 4})
compile_one("tma_box_16x256", "tma_scale_kernel", scale, {"BLOCK_M": 16, "BLOCK_N": 256}, {"num_warps": 4})
compile_one("tma_box_16x512", "tma_scale_kernel", scale, {"BLOCK_M": 16, "BLOCK_N": 512}, {"num_warps": 4})
dot = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
       "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
tiles = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
compile_one("plain_4", "specialized_dot_kernel", dot, tiles | {"SPECIALIZE": False}, {"num_warps": 4, "num_stages": 3})
compile_one("specialized_4", "specialized_dot_kernel", dot, tiles | {"SPECIALIZE": True}, {"num_warps": 4, "num_stages": 3})
compile_one("specialized_8", "specialized_dot_kernel", dot, tiles | {"SPECIALIZE": True}, {"num_warps": 8, "num_stages": 3})
fp8 = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32", "scale": "fp32",
       "stride_am": "i32", "stride_bn": "i32", "stride_cm": "i32"}
compile_one("fp8_tensor", "fp8_tensor_scaled_kernel", fp8, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, {"num_warps": 4})
mm = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
      "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32"}
mmc = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "UPCAST": False, "PRECISION": "tf32"}
compile_one("matmul_80", "matmul_kernel", mm, mmc, {"num_warps": 4, "num_stages": 3}, "cuda:80")
compile_one("matmul_90", "matmul_kernel", mm, mmc, {"num_warps": 4, "num_stages": 3}, "cuda:90")
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict:
    matmul = (ROOT / "course" / "09-matmul-fusion" / "exercises" / "matmul" / "solution.py").read_text()
    source = "\n\n".join(
        [
            "import triton\nimport triton.language as tl",
            jit_defs("\n".join(lesson_blocks())),
            jit_defs(matmul),
        ]
    )
    file = tmp_path_factory.mktemp("lesson14") / "kernels.py"
    file.write_text(source + "\n")
    env = dict(os.environ, TRITON_INTERPRET="0", TRITON_DEFAULT_FP_FUSION="1", PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run(
        [sys.executable, "-c", COMPILE, str(file)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_lesson_names_the_triton_it_compiled_with(compiled: dict) -> None:
    """The warp-specialization paragraph says what "this course's Triton (3.9)" does: another version must
    re-check it and update the text."""
    assert compiled["triton"].startswith("3.9"), compiled["triton"]
    assert "this course's Triton (3.9" in TEXT


def test_tma_copies_replace_pointer_loads_and_free_registers(compiled: dict) -> None:
    ptr, tma = compiled["pointer_copy"], compiled["tma_copy"]
    assert ptr["tma_loads"] == ptr["tma_stores"] == 0 and ptr["pointer_loads"] >= 1
    assert tma["tma_loads"] == 1 and tma["tma_stores"] == 1 and tma["pointer_loads"] == 0  # "one ... and one"
    assert tma["registers"] < 2 / 3 * ptr["registers"], (tma["registers"], ptr["registers"])
    assert "less than two thirds of the pointer version's registers" in TEXT


def test_triton_splits_a_box_wider_than_256_elements(compiled: dict) -> None:
    assert compiled["tma_box_16x256"]["tma_loads"] == 1
    assert compiled["tma_box_16x512"]["tma_loads"] == 2
    assert "a 16 × 512 fp16 block is moved by two TMA loads where a 16 × 256\nblock needs one" in TEXT


def test_warp_specialization_is_what_the_lesson_says_it_is(compiled: dict) -> None:
    plain, four, eight = compiled["plain_4"], compiled["specialized_4"], compiled["specialized_8"]
    assert plain["warp_specialize"] == 0 and plain["setmaxnreg"] == 0
    assert plain["tma_loads"] >= 1 and plain["wgmma"] >= 1
    assert four["warp_specialize"] >= 1 and four["setmaxnreg"] >= 1
    assert eight["warp_specialize"] == 0 and eight["setmaxnreg"] == 0
    assert eight["tma_loads"] >= 1 and eight["wgmma"] >= 1  # the dropped request: the pipelined form


def test_fp8_and_the_matmul_use_the_instructions_the_lesson_names(compiled: dict) -> None:
    assert compiled["fp8_tensor"]["wgmma_e4m3"] >= 1
    assert compiled["matmul_80"]["mma_sync"] >= 1 and compiled["matmul_80"]["wgmma"] == 0
    assert compiled["matmul_90"]["wgmma"] >= 1 and compiled["matmul_90"]["mma_sync"] == 0


INTERPRETER_RULES = r"""
import torch, triton, triton.language as tl

@triton.jit
def copy(x_ptr, y_ptr, M, N, s, BM: tl.constexpr, BN: tl.constexpr):
    x = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[s, 1], block_shape=[BM, BN])
    y = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[s, 1], block_shape=[BM, BN])
    y.store([0, 0], x.load([0, 0]))

for n, bn in ((70, 16), (64, 4)):
    x = torch.randn(16, n, dtype=torch.float16)
    try:
        copy[(1,)](x, torch.empty_like(x), 16, n, n, BM=16, BN=bn)
        print("accepted")
    except Exception as exc:
        print(str(exc).splitlines()[0])
"""


def test_the_interpreter_enforces_two_descriptor_rules() -> None:
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run(
        [sys.executable, "-c", INTERPRETER_RULES], capture_output=True, text=True, env=env, timeout=300
    )
    stride, box = done.stdout.strip().splitlines()[-2:]
    assert "16-byte aligned" in stride, done.stdout + done.stderr
    assert "at least 16 bytes" in box, done.stdout + done.stderr


def test_the_fp8_error_budget_is_the_examples_output() -> None:
    sys.path.insert(0, str(LESSON / "examples"))
    try:
        import fp8_error_budget as budget
    finally:
        sys.path.pop(0)
    plain = budget.budget()
    spiky = budget.budget(outlier=budget.OUTLIER)
    pct = lambda v, d=1: f"{100 * v:.{d}f} %"  # noqa: E731
    assert f"relative error (Frobenius norm) of {pct(plain['bf16'], 2)}" in TEXT
    assert f"e4m3 with per-block scales: {pct(plain['fp8_per_block'])}" in TEXT
    assert f"about {plain['fp8_per_block'] / plain['bf16']:.0f} times bf16's" in TEXT
    assert f"one scale per tensor: {pct(plain['fp8_per_tensor'])} on this well-behaved data" in TEXT
    assert f"{budget.OUTLIER:,.0f}".replace(",", " ") in TEXT
    assert f"grows to {pct(spiky['fp8_per_tensor'], 0)} with one scale per tensor" in TEXT
    assert f"per-block scales keep them at {pct(spiky['fp8_per_block'])}" in TEXT
    assert spiky["fp8_per_block"] == pytest.approx(plain["fp8_per_block"], rel=0.05)  # the outlier's row only


# ---- the lesson is not the answer ---------------------------------------------------------------------------

ADAPTERS = {
    # the nearest the lesson comes to each exercise, wrapped with the exercise's signature
    "persistent-matmul": """
def persistent_matmul(a, b, num_sms):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float32)
    specialized_dot_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
        a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, SPECIALIZE=False)
    return c.to(a.dtype)
""",
    "tma-matmul": """
def tma_matmul(a, b, num_sms):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float32)
    specialized_dot_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
        a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, SPECIALIZE=False)
    return c.to(a.dtype)
""",
    "fp8-matmul": """
def fp8_matmul(a, b, a_scale, b_scale):
    M, K = a.shape
    N = b.shape[0]
    c = torch.empty((M, N), device=a.device, dtype=torch.bfloat16)
    scale = (a_scale.max() * b_scale.max()).item()
    fp8_tensor_scaled_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
        a, b, c, M, N, K, scale, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    return c
""",
}
FAILS_WITH = {
    "persistent-matmul": "not-persistent",
    "tma-matmul": "not-persistent",
    "fp8-matmul": "wrong-result",
}


@pytest.mark.parametrize("exercise_id", sorted(ADAPTERS))
def test_the_lessons_code_pasted_as_the_answer_fails(exercise_id: str, tmp_path: Path) -> None:
    from tritonlab.grading import contracts
    from tritonlab.grading.check import pipeline
    from tritonlab.models import Exercise
    from tritonlab.runs import sandbox

    code = "\n\n".join(
        [
            'import torch\nDEVICE = "cuda" if torch.cuda.is_available() else "cpu"',
            *lesson_blocks(),
            textwrap.dedent(ADAPTERS[exercise_id]),
        ]
    )
    file = tmp_path / "pasted.py"
    file.write_text(code)
    contract = contracts.get(exercise_id)
    folder = LESSON / "exercises" / exercise_id
    exercise = Exercise(exercise_id, "", folder, contract.FUNCTION, {"en": exercise_id}, {}, {}, ())
    os.environ.setdefault("TRITONLAB_HOME", str(tmp_path / "home"))
    zygote = sandbox.Zygote("interpreter")
    try:
        zygote.wait_ready()
        seed = zlib.crc32(exercise_id.encode()) % 1000 + 1
        verdict = pipeline.check(exercise, file, "interpreter", zygote, seed=seed, timeout=120)
    finally:
        zygote.close()
    kinds = {f.kind for f in verdict.failures}
    assert not verdict.passed
    assert FAILS_WITH[exercise_id] in kinds, sorted(kinds)


# ---- the grader's pieces lesson 14 added ------------------------------------------------------------------


def test_fp8_inputs_travel_as_the_bits_torch_gives() -> None:
    import numpy as np
    import torch

    from tritonlab.grading import guards
    from tritonlab.grading.contracts import FP8, decode, f64_to_e4m3_bits, quantize, to_storage

    grid = np.arange(127, dtype=np.uint8).view(np.uint8)
    exact = torch.from_numpy(grid.copy()).view(torch.float8_e4m3fn).double().numpy()
    values = np.concatenate([np.random.default_rng(0).standard_normal(20_000) * 60, exact, -exact])
    values = np.concatenate([values, (exact[1:] + exact[:-1]) / 2])  # ties: round to even, like torch
    ours = f64_to_e4m3_bits(values)
    theirs = torch.from_numpy(values).to(torch.float8_e4m3fn).view(torch.uint8).numpy()
    assert np.array_equal(ours, theirs)
    q = quantize(values, FP8)
    assert np.array_equal(decode(to_storage(q, FP8), FP8), q)
    back = guards.from_numpy_storage(to_storage(q, FP8), FP8)
    assert back.dtype == torch.float8_e4m3fn and np.array_equal(back.double().numpy(), q)


def test_fp8_rounding_agrees_with_a_table_search_at_every_tie_and_edge() -> None:
    """`f64_to_e4m3_bits` rounds on float64's bits (fast enough for a GPU check's millions of elements); an
    independent oracle — the nearest of the 127 magnitudes by table search, ties to the even pattern — gives
    the same bits for every representable value, every midpoint and the floats just beside both, subnormals,
    saturation, infinities, NaN, -0 and a spread of magnitudes across every binade. (Torch cannot be the oracle
    here: it rounds float64 to float32 first, so just below a midpoint it rounds twice.)"""
    import numpy as np

    from tritonlab.grading.contracts import e4m3_bits_to_f64, f64_to_e4m3_bits

    table = e4m3_bits_to_f64(np.arange(0x7F))  # 0 .. 448, increasing

    def oracle(v: np.ndarray) -> np.ndarray:
        mag = np.minimum(np.abs(np.nan_to_num(v)), 448.0)
        hi = np.clip(np.searchsorted(table, mag), 0, 0x7E)
        lo = np.maximum(hi - 1, 0)
        d_lo, d_hi = mag - table[lo], table[hi] - mag
        pick = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0)), hi, lo)
        bits = (pick | np.where(np.signbit(v), 0x80, 0)).astype(np.uint8)
        return np.where(np.isnan(v), np.uint8(0x7F), bits).astype(np.uint8)

    rng = np.random.default_rng(5)
    mids = (table[1:] + table[:-1]) / 2
    edges = np.array(
        [0.0, np.nan, np.inf, 448, 449, 463.9, 464, 479, 480, 1e6, 1e300, 5e-324, 2.0**-10, 2.0**-7]
    )
    beside = [np.nextafter(x, t) for x in (table, mids) for t in (0.0, 1e3)]
    logs = np.exp2(rng.uniform(-14, 11, 100_000))
    values = np.concatenate([table, mids, *beside, edges, logs])
    values = np.concatenate([values, -values]).reshape(2, -1)  # two dimensions: the shape is kept
    ours = f64_to_e4m3_bits(values)
    assert ours.shape == values.shape and ours.dtype == np.uint8
    assert np.array_equal(ours, oracle(values))
    assert f64_to_e4m3_bits(np.zeros((0, 3))).shape == (0, 3)


def test_fp8_cases_scale_each_tile_as_a_loop_over_tiles_does() -> None:
    """`quantize_groups` works on every tile at once; a loop over the (row block, 128-wide group) tiles, each
    scaled by its own largest magnitude, gives the same values and scales, ragged edges included."""
    import math

    import numpy as np

    from tritonlab.grading.contracts import FP8, quantize
    from tritonlab.grading.contracts import fp8_matmul as fp8

    def loop(rng: np.random.Generator, rows: int, k: int, block_rows: int) -> tuple[np.ndarray, np.ndarray]:
        groups, blocks = math.ceil(k / 128), math.ceil(rows / block_rows)
        x = rng.standard_normal((rows, k)) * np.exp(rng.uniform(-2, 2, size=(rows, 1)))
        x *= np.repeat(np.exp(rng.uniform(-1.5, 1.5, size=(1, groups))), 128, axis=1)[:, :k]
        scales, q = np.zeros((blocks, groups)), np.zeros((rows, k))
        for i in range(blocks):
            for g in range(groups):
                tile = (slice(i * block_rows, (i + 1) * block_rows), slice(g * 128, (g + 1) * 128))
                s = quantize(np.array([(float(np.abs(x[tile]).max()) or 1.0) / 448.0]), "float32")[0]
                scales[i, g], q[tile] = s, quantize(x[tile] / s, FP8)
        return np.where(q == 0, quantize(np.array([2.0**-9]), FP8)[0], q), scales

    for rows, k, block_rows in [(1, 1, 1), (7, 3, 128), (33, 200, 1), (260, 129, 128), (130, 300, 128)]:
        want = loop(np.random.default_rng(rows * k), rows, k, block_rows)
        got = fp8.quantize_groups(np.random.default_rng(rows * k), rows, k, block_rows)
        assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True)), (rows, k, block_rows)


def test_bf16_rounding_matches_torch() -> None:
    """`f64_to_bf16_bits` (in uint32, in place) gives torch's bits for float32 values across the whole range."""
    import numpy as np
    import torch

    from tritonlab.grading.contracts import f64_to_bf16_bits

    rng = np.random.default_rng(6)
    f32 = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    f32 = f32[np.isfinite(f32)]
    f32 = np.concatenate([f32, np.float32([0.0, -0.0, 3.389e38, -3.389e38, 1e-45, np.inf, -np.inf])])
    theirs = torch.from_numpy(f32.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(f64_to_bf16_bits(f32.astype(np.float64)), theirs)
    assert f64_to_bf16_bits(np.array([np.nan]))[0] == 0x7FC0


def test_inspect_keeps_only_known_instruction_counts() -> None:
    """The inspect child imported the learner's file, which could write inspect.json: counts are validated."""
    from tritonlab.grading import kernel_inspect

    forged = {
        "kernels": [{"kernel": "k", "features": {"tma_loads": -1, "wgmma": 2, "evil": 5, "cp_async": "x"}}]
    }
    (kernel,) = kernel_inspect.checked(forged, "cuda:90")["kernels"]
    assert kernel["features"] == {"wgmma": 2}
    assert (
        kernel_inspect.checked({"kernels": [{"kernel": "k", "features": [1]}]}, "cuda:90")["kernels"][0][
            "features"
        ]
        == {}
    )


PEER_RUN = ROOT / "docs" / "gpu-runs" / "2026-12-06-h100-80gb-hbm3-92a71f8" / "peer-kernels.json"
BENCH_RUN = ROOT / "docs" / "gpu-runs" / "2026-12-05-h100-80gb-hbm3-8b0198d" / "bench-all.json"


@pytest.mark.parametrize("lang", ["en", "pt", "es"])
def test_what_the_libraries_launch_is_the_recorded_profile(lang: str) -> None:
    """The section on what cuBLAS and cuDNN launch quotes the recorded profile (benchmarks/peer_kernels.py):
    every library kernel it names has 12 warps and 168 registers a thread, and each TFLOP/s figure and `bench`
    ratio it gives is the recorded one, rounded as printed."""
    text = (LESSON / f"lesson.{lang}.md").read_text(encoding="utf-8")
    assert str(PEER_RUN.relative_to(ROOT)) in text
    rows = {(r["case"], r["impl"]): r for r in json.loads(PEER_RUN.read_text())["rows"] if "error" not in r}
    quoted = {
        ("matmul_tma bf16 4096x4096x4096", "ours"): None,
        ("matmul_tma bf16 4096x4096x4096", "cuBLAS"): (12, 168),
        ("attention bf16 4x32x4096x128", "ours"): None,
        ("attention bf16 4x32x4096x128", "sdpa_cudnn"): (12, 168),
        ("matmul_fp8 fp8e4m3 4096x4096x4096", "ours"): None,
        ("matmul_fp8 fp8e4m3 4096x4096x4096", "scaled_mm blockwise"): (12, 168),
    }
    for key, shape in quoted.items():
        row = rows[key]
        assert f"{row['tflops']:.0f}" in text, (lang, key, row["tflops"])
        main = row["kernels"][0]
        if shape:
            assert (main["warps"], main["regs"]) == shape, (key, main)
        else:  # ours: one role, 4 or 8 warps, as the text says
            assert main["warps"] in (4, 8), (key, main)
    for key in rows:  # cuDNN's backward too: every cuDNN and cuBLAS main kernel has that shape
        if key[1] in ("sdpa_cudnn", "cuBLAS", "scaled_mm blockwise"):
            assert (rows[key]["kernels"][0]["warps"], rows[key]["kernels"][0]["regs"]) == (12, 168), key
    bench = {
        (r["kernel"], tuple(r["shape"]), bool(r.get("causal"))): r["speedup"]
        for r in json.loads(BENCH_RUN.read_text())["rows"]
    }
    ratios = (
        bench[("matmul_tma", (4096, 4096, 4096), False)]["cuBLAS"],
        bench[("attention", (4, 32, 4096, 128), False)]["sdpa_cudnn"],  # full attention, as profiled
        bench[("matmul_fp8", (4096, 4096, 4096), False)]["scaled_mm blockwise"],
    )
    printed = [f"{x:.2f}×" if lang == "en" else f"{x:.2f}×".replace(".", ",") for x in ratios]
    assert ", ".join(printed[:2]) in text, (lang, printed)
    assert printed[2] in text, (lang, printed)


WS_RUN = ROOT / "docs" / "gpu-runs" / "2026-12-06-h100-80gb-hbm3-94b849e" / "attention-ws.json"
WS_RUN_2 = ROOT / "docs" / "gpu-runs" / "2026-12-06-h100-80gb-hbm3-ad36972"


@pytest.mark.parametrize("lang", ["en", "pt", "es"])
def test_the_gluon_forward_figures_are_the_recorded_ones(lang: str) -> None:
    """The paragraph on the course's Gluon attention forward quotes both recorded runs, the unfavourable one too:
    benchmarks/attention_ws.py's TFLOP/s and cuDNN's on the full 4·32·4096·128 row, its geometric means against
    the fastest SDPA backend in each run (the Gluon kernel as then configured, and the Triton forward), and the
    second run's `bench --all` target with its spread and per-row range at each head dim."""
    text = " ".join((LESSON / f"lesson.{lang}.md").read_text(encoding="utf-8").split())
    assert "2026-12-06 (94b849e)" in text and "2026-12-06 (ad36972)" in text and "attention_ws.py" in text
    run1 = json.loads(WS_RUN.read_text())
    run2 = json.loads((WS_RUN_2 / "attention-ws.json").read_text())
    bench = json.loads((WS_RUN_2 / "bench-all.json").read_text())
    assert all(r["fastest_peer"] == "sdpa_cudnn" for r in run1["rows"] + run2["rows"])  # the text names cuDNN
    full = {(tuple(r["shape"]), r["causal"]): r for r in run1["rows"]}[((4, 32, 4096, 128), False)]["tflops"]
    target = next(t for t in bench["targets"] if t["what"].startswith("attention bf16"))
    rows = [r for r in bench["rows"] if r["kernel"] == "attention"]
    per_row = {d: [min(r["speedup"].values()) for r in rows if r["shape"][3] == d] for d in (64, 128)}
    assert len({f"{x:.2f}" for x in per_row[64]}) == 1  # the text gives one figure for head dim 64
    figures = [
        f"{full['ws-pingpong']:.0f} TFLOP/s",
        f"{full['sdpa_cudnn']:.0f}",
        f"{run1['geomean_vs_fastest']['ws-pingpong']:.2f}× and {run2['geomean_vs_fastest']['ws']:.2f}×",
        f"{run1['geomean_vs_fastest']['shipped']:.2f}× and {run2['geomean_vs_fastest']['triton']:.2f}×",
        f"{target['measured']:.2f}×",
        f"{target['spread'][0]:.2f}–{target['spread'][1]:.2f}",
        f"{min(per_row[128]):.2f}–{max(per_row[128]):.2f}×",
        f"{per_row[64][0]:.2f}×",
    ]
    for figure in figures:
        printed = figure if lang == "en" else figure.replace(".", ",")
        if lang != "en":
            printed = printed.replace(" and ", {"pt": " e ", "es": " y "}[lang])
        assert printed in text, (lang, printed)


WG3_RUN = ROOT / "docs" / "gpu-runs" / "2026-12-06-h100-80gb-hbm3-8906b98" / "attention-ws.json"
EXP2_RUN = ROOT / "docs" / "gpu-runs" / "2026-12-06-h100-80gb-hbm3-e0b94ae" / "attention-ws.json"


@pytest.mark.parametrize("lang", ["en", "pt", "es"])
def test_the_three_warpgroup_and_split_exponential_figures_are_the_recorded_ones(lang: str) -> None:
    """The head-dim-64 paragraph: three computing warpgroups against two on 4·32·4096·64, full and causal, and
    the split exponentials' geometric mean against the default's, each as recorded; and the launch it describes
    is the shipped default at head dim 64 (three warpgroups of 160 registers, no early score product)."""
    from tritonlab.perf.kernels import attention_ws

    text = " ".join((LESSON / f"lesson.{lang}.md").read_text(encoding="utf-8").split())
    assert "2026-12-06 (8906b98)" in text and "2026-12-06 (e0b94ae)" in text
    cfg = attention_ws.CONFIGS[64]
    assert (cfg["NUM_WG"], cfg["BLOCK_M"], cfg["COMPUTE_REGS"], cfg["PIPE"]) == (3, 192, 160, False), cfg
    wg3 = json.loads(WG3_RUN.read_text())
    rows = {r["causal"]: r for r in wg3["rows"] if r["shape"] == [4, 32, 4096, 64]}
    assert all(r["fastest_peer"] == "sdpa_cudnn" for r in rows.values())  # the text names cuDNN

    def ratio(row: dict, name: str) -> str:
        return f"{row['tflops'][name] / row['tflops'][row['fastest_peer']]:.2f}×"

    causal = {ratio(rows[True], "ws-3wg-no-pingpong"), ratio(rows[True], "ws")}
    assert len(causal) == 1  # "either way"
    exp2 = json.loads(EXP2_RUN.read_text())["geomean_vs_fastest"]
    figures = [
        f"{ratio(rows[False], 'ws-3wg-no-pingpong')} cuDNN"
        if lang == "en"
        else ratio(rows[False], "ws-3wg-no-pingpong"),
        ratio(rows[False], "ws"),
        causal.pop(),
        f"{exp2['ws-poly2']:.2f}×",
        f"{exp2['ws']:.2f}×",
        "160",
        "192",
    ]
    for figure in figures:
        printed = figure if lang == "en" else figure.replace(".", ",")
        assert printed in text, (lang, printed)


UNTIMED = {
    "en": "has not been timed on a GPU yet",
    "pt": "ainda não foi cronometrado numa GPU",
    "es": "todavía no se ha cronometrado en una GPU",
}


@pytest.mark.parametrize("lang", ["en", "pt", "es"])
def test_the_serialised_wgmma_paragraph_quotes_what_the_lowering_test_reads(lang: str) -> None:
    """The paragraph on ptxas serialising the products quotes ptxas's note as the lowering check reads it, names
    the kernel and the test that hold it, and says the GEMM is untimed only while it is not the default."""
    text = " ".join((LESSON / f"lesson.{lang}.md").read_text(encoding="utf-8").split())
    note = "wgmma.mma_async instructions are serialized"
    assert f"`{note} due to non wgmma instructions reading accumulator registers`" in text, lang
    lowering = (ROOT / "src" / "tritonlab" / "perf" / "kernels" / "lowering.py").read_text(encoding="utf-8")
    assert f'"{note}" in log' in lowering
    for path in ("src/tritonlab/perf/kernels/matmul_fp8_ws.py", "tests/test_reference_lowering.py"):
        assert f"`{path}`" in text and (ROOT / path).is_file(), (lang, path)
    assert "wgmma_serialized" in (ROOT / "tests" / "test_reference_lowering.py").read_text(encoding="utf-8")
    source = (ROOT / "src" / "tritonlab" / "perf" / "kernels" / "matmul_fp8.py").read_text(encoding="utf-8")
    default_on = re.search(r"^GLUON_DEFAULT = (True|False)$", source, re.M)
    assert default_on, "matmul_fp8.GLUON_DEFAULT is not a plain True/False"
    assert (UNTIMED[lang] in text) == (default_on.group(1) == "False"), lang
