"""`tritonlab viz`: recorded access sets against known answers, tile orders, pictures, the real entry point.

The recorder itself runs in child processes only (it executes kernels on the interpreter, and a test kernel
that stores out of bounds must never run in the pytest process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, cli

from tritonlab.content.course import load_course
from tritonlab.grading.contracts import Case, Tensor
from tritonlab.runs import sandbox
from tritonlab.viz import logview as lv
from tritonlab.viz import pictures, roofline, tiles
from tritonlab.viz.run import best_case, candidate_cases, record

COPY_KERNEL = """
import json, sys
import torch, triton, triton.language as tl
from tritonlab.viz.recorder import AccessLog, recording

@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs {op} n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)

@triton.jit
def wild_kernel(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs * 100_000_000, tl.load(src + offs))

# inputs inside larger buffers, as the guards arrange: an access just past the end stays in known memory
src_buf, dst_buf = torch.zeros(64), torch.zeros(64)
src, dst = src_buf[16:26], dst_buf[16:26]
src.copy_(torch.arange(10.0))
log = AccessLog()
with recording(log):
    copy_kernel[(3,)](src, dst, 10, BLOCK=4)
    wild_kernel[(1,)](src, dst, BLOCK=4)
print(json.dumps(log.to_json()))
"""


def record_in_child(tmp_path: Path, op: str) -> dict:
    script = tmp_path / f"kernels_{'le' if op == '<=' else 'lt'}.py"
    script.write_text(COPY_KERNEL.replace("{op}", op))
    env = dict(
        os.environ,
        TRITON_INTERPRET="1",
        PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def sets(launch: dict, op: str) -> dict[int, tuple[list[int], list[int], list[int]]]:
    """program -> (in-bounds offsets, masked lane numbers, out-of-bounds offsets) of its `op` accesses."""
    out = {}
    for number, program in enumerate(launch["programs"]):
        for access in program["accesses"]:
            if access["op"] == op:
                ln = lv.lanes(access)
                out[number] = (
                    ln.offsets[ln.inside].tolist(),
                    np.flatnonzero(ln.masked).tolist(),
                    ln.offsets[ln.oob].tolist(),
                )
    return out


def test_vector_copy_access_sets_match_the_known_answer(tmp_path: Path) -> None:
    log = record_in_child(tmp_path, "<")
    launch = log["launches"][0]
    assert launch["kernel"] == "copy_kernel" and launch["grid"] == [3, 1, 1]
    assert launch["scalars"] == {"n": 10, "BLOCK": 4}
    assert [t["arg"] for t in launch["tensors"]] == ["src", "dst"]
    assert [p["pid"] for p in launch["programs"]] == [[0, 0, 0], [1, 0, 0], [2, 0, 0]]
    for op in ("load", "store"):
        assert sets(launch, op) == {
            0: ([0, 1, 2, 3], [], []),
            1: ([4, 5, 6, 7], [], []),
            2: ([8, 9], [2, 3], []),
        }
    assert lv.touched(launch, 1, "store") == {0: {0, 1, 2, 3}, 1: {4, 5, 6, 7}, 2: {8, 9}}
    assert lv.masked_lanes(launch, 0, "load") == {0: [], 1: [], 2: [2, 3]}
    assert lv.stats(launch)["oob_lanes"] == 0


def test_off_by_one_mask_records_the_access_at_n_as_out_of_bounds(tmp_path: Path) -> None:
    launch = record_in_child(tmp_path, "<=")["launches"][0]
    for op in ("load", "store"):
        assert sets(launch, op)[2] == ([8, 9], [3], [10])  # lane 2 ran at index n = 10
        assert sets(launch, op)[0] == ([0, 1, 2, 3], [], [])
    assert lv.oob_offsets(launch) == {2: {10}}


def test_a_wild_pointer_is_recorded_and_not_executed(tmp_path: Path) -> None:
    wild = record_in_child(tmp_path, "<")["launches"][1]
    store = next(a for a in wild["programs"][0]["accesses"] if a["op"] == "store")
    assert store["oob"] == [1, 2, 3] and store["suppressed"] == [1, 2, 3]  # lane 0 is dst[0]: in bounds
    assert store["offsets"][:2] == [0, 100_000_000]


# ---- through the sandbox, on the reference solutions -----------------------------------------------------


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    os.environ["TRITONLAB_HOME"] = str(tmp_path_factory.mktemp("home"))
    z = sandbox.Zygote("interpreter")
    z.wait_ready()
    yield z
    z.close()


@pytest.fixture(scope="module")
def course():  # noqa: ANN201
    return load_course(ROOT / "course")


def one_case(course, zygote, exercise_id: str, case: str, file: Path | None = None) -> dict:  # noqa: ANN001
    exercise = course.exercise(exercise_id)
    result = record(exercise, file or exercise.solution, zygote, candidate_cases(exercise_id, case))
    assert not result.get("import_error") and result["cases"], result
    entry = result["cases"][0]
    assert entry["status"] == "returned", entry.get("exception")
    return entry


def test_transpose_map_of_the_reference(course, zygote) -> None:  # noqa: ANN001
    entry = one_case(course, zygote, "transpose", "65×63 float32")
    launch = lv.main_launch(entry)
    x, out = launch["tensors"][0], launch["tensors"][1]
    assert (x["role"], x["shape"], out["role"], out["shape"]) == ("input", [65, 63], "output", [63, 65])
    assert launch["grid"] == [3, 2, 1] and launch["scalars"]["BLOCK_M"] == 32
    for number, program in enumerate(launch["programs"]):
        pm, pn = program["pid"][:2]
        rows, cols = range(32 * pm, min(32 * pm + 32, 65)), range(32 * pn, min(32 * pn + 32, 63))
        expect = {(i, j) for i in rows for j in cols}
        loaded = {tuple(c) for c in lv.coords(x, np.array(sorted(lv.touched(launch, 0, "load")[number])))[1]}
        stored = {
            tuple(c) for c in lv.coords(out, np.array(sorted(lv.touched(launch, 1, "store")[number])))[1]
        }
        assert loaded == expect
        assert stored == {(j, i) for i, j in expect}  # x[i, j] -> out[j, i]
    assert lv.stats(launch)["oob_lanes"] == 0
    # the edge program (2, 1) loads one real row; its 31 masked rows are placed below the tensor
    where = lv.placed(launch, 0, "load")[5][0][1]
    assert where[:, 0].min() == 64 and where[:, 0].max() == 95 and where[:, 1].max() == 63


ROW_MAJOR_MATMUL = """
import torch
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
              BK: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    pid_m, pid_n = pid // tiles_n, pid % tiles_n
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        x = tl.load(a + rm[:, None] * sam + rk[None, :] * sak, mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        y = tl.load(b + rk[:, None] * sbk + rn[None, :] * sbn, mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc, input_precision="ieee")
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, 32) * triton.cdiv(N, 32),)
    mm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                    BM=32, BN=32, BK=16)
    return c
"""


def test_matmul_tile_order_grouped_reference_and_row_major_learner(course, zygote, tmp_path: Path) -> None:  # noqa: ANN001
    entry = one_case(course, zygote, "matmul", "many programs")
    launch = lv.main_launch(entry)
    # reference: 64×64 tiles, GROUP_M=8 over 3 tile rows -> down the columns
    assert tiles.order_summary(launch) == {"tile": [64, 64], "order": [[0, 3], [1, 4], [2, 5]]}
    a, b, c = tiles.roles(launch)
    assert [launch["tensors"][t]["arg"] for t in (a, b, c)] == ["a_ptr", "b_ptr", "c_ptr"]
    first = lv.touched(launch, a)[0]  # program 0 reads rows 0..63 of A, every k
    rows = {int(r) for r in lv.coords(launch["tensors"][a], np.array(sorted(first)))[1][:, 0]}
    assert rows == set(range(64))
    learner = tmp_path / "row_major.py"
    learner.write_text(ROW_MAJOR_MATMUL)
    mine = lv.main_launch(one_case(course, zygote, "matmul", "many programs", learner))
    assert tiles.order_summary(mine) == {"tile": [32, 32], "order": np.arange(20).reshape(5, 4).tolist()}
    assert tiles.grouped_order(4, 3, 2).tolist() == [[0, 2, 4], [1, 3, 5], [6, 8, 10], [7, 9, 11]]


def test_the_drawn_case_prefers_an_out_of_bounds_access(course, zygote, tmp_path: Path) -> None:  # noqa: ANN001
    learner = tmp_path / "off_by_one.py"
    source = course.exercise("vector-copy").solution.read_text()
    assert "offsets < n" in source
    learner.write_text(source.replace("offsets < n", "offsets <= n"))
    exercise = course.exercise("vector-copy")
    result = record(exercise, learner, zygote, candidate_cases("vector-copy"))
    chosen = best_case(result, "vector-copy")
    launch = lv.main_launch(chosen)
    n = launch["scalars"]["n"]
    assert lv.oob_offsets(launch) == {len(launch["programs"]) - 1: {n}}


def test_pictures_are_drawn_png_and_svg(course, zygote, tmp_path: Path) -> None:  # noqa: ANN001
    strip = one_case(course, zygote, "pid-map", "n=13, block_size=4")
    gemm = one_case(course, zygote, "matmul", "many programs")
    twod = one_case(course, zygote, "add-bias", "65×63 float32")
    for name, entry, exercise in (
        ("strip", strip, "pid-map"),
        ("gemm", gemm, "matmul"),
        ("map", twod, "add-bias"),
    ):
        for suffix in ("png", "svg"):
            path = pictures.draw(entry, exercise, tmp_path / f"{name}.{suffix}")
            assert path.is_file() and 10_000 < path.stat().st_size < 5_000_000, (name, path.stat().st_size)
    assert (tmp_path / "strip.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "map.svg").read_bytes()[:500]


def test_roofline_from_plain_numbers(tmp_path: Path) -> None:
    assert roofline.attainable(1000.0, 100.0, 10.0) == pytest.approx(10.0)  # 1000 GB/s × 10 FLOP/B
    assert roofline.attainable(1000.0, 100.0, 1e4) == pytest.approx(100.0)
    path = roofline.roofline(
        tmp_path / "roof.png",
        peak_gbps=4000,
        peak_tflops=600,
        flops=2 * 512**3,
        nbytes=3 * 512 * 512 * 2,
        seconds=20e-6,
    )
    assert path.stat().st_size > 10_000
    bench = {
        "peaks": {"copy_gbps": 4000, "matmul_bf16_tflops": 600},
        "env": {"gpu": "test GPU"},
        "rows": [
            {
                "kernel": "matmul",
                "dtype": "fp16",
                "shape": [512, 512, 512],
                "flops": 2 * 512**3,
                "bytes": 3 * 512 * 512 * 2,
                "impls": {"triton": {"ms": 0.02}},
            }
        ],
    }
    assert roofline.from_bench(bench, tmp_path / "bench.svg").stat().st_size > 10_000


def test_cli_viz_through_the_real_entry_point(home: Path, tmp_path: Path) -> None:
    learner = tmp_path / "off_by_one.py"
    learner.write_text(
        textwrap.dedent("""
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets <= n
            tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


        def vector_copy(x):
            y = torch.empty_like(x)
            if x.numel():
                copy_kernel[(triton.cdiv(x.numel(), 4),)](x, y, x.numel(), BLOCK=4)
            return y
    """)
    )
    out, log = tmp_path / "pic.png", tmp_path / "log.json"
    done = cli("viz", "vector-copy", "--file", str(learner), "--out", str(out), "--log", str(log))
    assert done.returncode == 0, done.stderr
    assert "2 out-of-bounds lane accesses" in done.stdout and out.stat().st_size > 10_000
    data = json.loads(log.read_text())
    assert data["summary"]["oob_lanes"] == 2 and data["summary"]["case"] == "n=7 float32"
    assert cli("viz", "vector-copy", "--out", str(tmp_path / "x.jpg")).returncode == 2


EVERY = [
    ("vector-copy", "strip"),
    ("pid-map", "strip"),
    ("vector-add", "strip"),
    ("copy-2d", "map"),
    ("transpose", "map"),
    ("add-bias", "map"),
    ("softmax", "map"),
    ("debug-rmsnorm", "map"),
    ("matmul", "gemm"),
    ("matmul-bias", "gemm"),
    ("autotune", "gemm"),
]


@pytest.mark.slow
def test_every_kernel_exercise_draws_its_reference(home: Path, tmp_path: Path) -> None:
    from tritonlab.service import Service
    from tritonlab.viz.run import visualize

    service = Service(course_dir=ROOT / "course", workspace_dir=tmp_path / "ws", backend="interpreter")
    try:
        for exercise_id, kind in EVERY:
            data, log = visualize(service, exercise_id, solution=True)
            assert data[:4] == b"\x89PNG" and len(data) > 10_000, exercise_id
            summary = log["summary"]
            assert summary["kind"] == kind and summary["programs"] >= 1 and summary["oob_lanes"] == 0, summary
    finally:
        service.close()


def test_case_choice_keeps_small_plain_cases() -> None:
    cases = candidate_cases("transpose")
    assert cases and all(isinstance(c, Case) for c in cases)
    assert all(sum(a.values.size for a in c.args if isinstance(a, Tensor)) <= 40_000 for c in cases)
    assert candidate_cases("vector-copy", "1025")[0].name == "n=1025 float32"
