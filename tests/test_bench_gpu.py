"""GPU-only checks of the benchmark (skipped without CUDA): correctness at benchmark-like sizes and one
measurement through the real protocol."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    "name,shape,dtype",
    [
        ("vector_add", (2**24 + 3,), torch.float32),
        ("copy_2d", (4096, 4000), torch.bfloat16),
        ("transpose", (4096, 2050), torch.float32),
        ("softmax", (512, 32768), torch.bfloat16),
        ("softmax", (4096, 1000), torch.float32),
        ("rms_norm", (4096, 8192), torch.bfloat16),
        ("matmul", (4096, 4096, 4096), torch.bfloat16),
        ("matmul", (16, 4096, 4096), torch.float16),
        ("matmul", (1000, 1000, 1000), torch.float16),
        ("matmul_bias_gelu", (2048, 2048, 2048), torch.bfloat16),
    ],
)
def test_reference_kernel_correct_on_gpu(name: str, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    from tritonlab.perf.kernels.selfcheck import check

    r = check(name, shape, dtype, "cuda")
    assert r.ok, r


def test_measure_case_on_gpu() -> None:
    from tritonlab.perf import bench
    from tritonlab.perf.kernels import cases

    case = cases.vector_add_cases("cuda", [2**24])[0]
    row = bench.measure_case(case, {"copy_gbps": 4000.0, "matmul_bf16_tflops": 700.0}, rep=20)
    assert row["impls"]["triton"]["ms"] > 0 and row["speedup"]["torch"] > 0.5
