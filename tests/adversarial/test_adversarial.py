"""The adversarial suite in CI: every case contained, or skipped with the reason (see cases.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, Bench, Case  # noqa: E402


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    root = tmp_path_factory.mktemp("adversarial")
    saved = {k: os.environ.get(k) for k in ("TRITONLAB_HOME", "TRITONLAB_BACKEND", "TRITONLAB_WORKSPACE")}
    os.environ["TRITONLAB_HOME"] = str(root / "home")
    os.environ["TRITONLAB_BACKEND"] = "interpreter"
    os.environ.pop("TRITONLAB_WORKSPACE", None)
    b = Bench(root)
    yield b
    b.close()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.mark.parametrize("case", CASES, ids=[c.file.removesuffix(".py") for c in CASES])
def test_adversarial_case_is_contained(bench: Bench, case: Case) -> None:
    if why := bench.missing(case):
        pytest.skip(f"{case.name}: {why}")
    record = bench.run(case)
    containment = [p for p in record.problems() if p != record.problem]
    assert not containment, f"{case.name}: {containment}"
    if record.problem and case.known_limit:
        pytest.xfail(f"known limit: {case.known_limit}")
    assert record.problem is None, f"{case.name}: {record.problem}\noutput: {record.outcome.output[-2000:]}"
    assert record.recovery_s < 30, f"{case.name}: recovery took {record.recovery_s:.1f} s"


def test_bench_reports_its_layer(bench: Bench) -> None:
    """The suite says which layer it ran under: a skipped hardened case is visible, never silent."""
    assert isinstance(bench.hardened, bool)
    if not bench.hardened:
        assert bench.service.hardened_reason, "a basic-only run must say why the hardened layer is missing"
