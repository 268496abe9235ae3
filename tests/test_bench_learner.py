"""`tritonlab bench EXERCISE --file F`: the learner's kernel is timed in the sandbox, after it agrees with the
reference kernel. Without a GPU only --force-interpreter runs (tiny sizes, meaningless numbers), which is what
these tests use to drive the whole path through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli, has_cuda

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(has_cuda(), reason="these tests drive the no-GPU paths")


def test_learner_kernel_is_timed_next_to_the_reference(home: Path) -> None:
    solution = ROOT / "course" / "05-vector-add" / "exercises" / "vector-add" / "solution.py"
    out = cli("bench", "vector-add", "--file", str(solution), "--force-interpreter", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["rows"] and not data["problems"]
    for row in data["rows"]:
        assert {"your kernel", "course reference", "torch"} <= set(row["impls"])
        assert row["impls"]["your kernel"]["ms"] > 0 and "course reference" in row["speedup"]


def test_a_wrong_kernel_is_not_timed(home: Path) -> None:
    wrong = ROOT / "tests" / "wrong" / "matmul_bias" / "relu_for_gelu.py"
    out = cli("bench", "matmul-bias", "--file", str(wrong), "--force-interpreter")
    assert out.returncode == 1
    assert "differs from the reference kernel" in out.stderr and "not timed" in out.stderr


def test_import_errors_and_usage_errors(home: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def softmax(x)\n    return x\n")
    out = cli("bench", "softmax", "--file", str(broken), "--force-interpreter")
    assert out.returncode == 1 and "SyntaxError" in out.stderr and "broken.py" in out.stderr
    assert cli("bench", "vector_add", "--file", str(broken)).returncode == 2  # --file needs an exercise id
    refused = cli("bench", "softmax", "--file", str(broken))
    assert refused.returncode == 2 and "needs an NVIDIA GPU" in refused.stderr
