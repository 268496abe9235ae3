"""The occupancy exercise gives the same verdict whichever Triton compiles it (issue 40): the bar is pinned to the
starter's occupancy as Triton 3.9.0 compiles it for sm_90, and the learner's register count is graded one
allocation unit (REGISTER_MARGIN) lower.

REGISTERS holds what `scripts/occupancy_versions.py` printed for the starter's kernel body on sm_90 with
Triton 3.9.0 and with Triton 3.6.0 (the GPU machine's version, installed with `pip install --target` and put
first on PYTHONPATH; both compiles need no GPU): registers per thread and programs per SM for each
(BLOCK, NUM_WARPS). Before the fix, (8192, 4) passed on 3.6 and failed on 3.9, and (4096, 8) had one
register to spare on both.
"""

from __future__ import annotations

import pytest

from tritonlab.grading.contracts import occupancy as occ
from tritonlab.grading.kernel_inspect import occupancy

# (BLOCK, NUM_WARPS): (registers with 3.9.0, with 3.6.0, programs per SM with 3.9.0, with 3.6.0)
REGISTERS = {
    (1024, 1): (72, 72, 28, 28),
    (1024, 2): (37, 37, 24, 24),
    (1024, 4): (24, 24, 16, 16),
    (1024, 8): (18, 18, 8, 8),
    (1024, 16): (12, 12, 4, 4),
    (2048, 1): (88, 88, 20, 20),
    (2048, 2): (68, 68, 14, 14),
    (2048, 4): (37, 37, 12, 12),
    (2048, 8): (24, 24, 8, 8),
    (2048, 16): (18, 18, 4, 4),
    (4096, 1): (167, 167, 12, 12),
    (4096, 2): (90, 94, 10, 10),
    (4096, 4): (70, 72, 7, 7),
    (4096, 8): (39, 40, 6, 6),
    (4096, 16): (26, 32, 4, 4),
    (8192, 1): (255, 255, 8, 8),
    (8192, 2): (167, 167, 6, 6),
    (8192, 4): (92, 96, 5, 5),
    (8192, 8): (73, 80, 3, 3),
    (8192, 16): (40, 47, 3, 2),
    (16384, 1): (255, 168, 8, 12),
    (16384, 2): (255, 255, 4, 4),
    (16384, 4): (167, 255, 3, 2),
    (16384, 8): (92, 109, 2, 2),
    (16384, 16): (60, 77, 2, 1),
}
PASSING = {(1024, 1), (1024, 2), (1024, 4), (1024, 8), (2048, 1), (2048, 2), (2048, 4), (2048, 8)}
PASSING |= {(4096, 4), (4096, 8)}


def compiled(registers: int, num_warps: int) -> dict:
    """What the trusted compile child reports for one kernel (the fields judge_compile reads)."""
    return {
        "resources": {"registers": registers, "shared_memory": 0, "spill_stores": 0, "spill_loads": 0},
        "num_warps": num_warps,
        "occupancy": occupancy(occ.TARGET, registers, 0, num_warps),
    }


def test_the_recorded_registers_give_the_recorded_programs() -> None:
    for (_block, warps), (r39, r36, p39, p36) in REGISTERS.items():
        assert occupancy(occ.TARGET, r39, 0, warps)["programs_per_sm"] == p39
        assert occupancy(occ.TARGET, r36, 0, warps)["programs_per_sm"] == p36


@pytest.mark.parametrize("version", [0, 1], ids=["triton-3.9", "triton-3.6"])
def test_the_verdict_does_not_depend_on_the_compiler(version: int) -> None:
    starter = compiled(REGISTERS[(16384, 4)][version], 4)
    passed = set()
    for (block, warps), row in REGISTERS.items():
        failures = occ.judge_compile([starter, compiled(row[version], warps)])
        assert all(f.kind == "low-occupancy" for f in failures), failures
        if not failures:
            passed.add((block, warps))
    assert passed == PASSING


def test_a_failure_names_the_pinned_bar_and_the_margin() -> None:
    (failure,) = occ.judge_compile([compiled(255, 4), compiled(96, 4)])  # 8192 × 4 on Triton 3.6
    assert "needed: at least 6 programs and 24 warps per SM" in failure.message
    assert "graded as 88" in failure.message and "Triton 3.9.0" in failure.message


def test_the_pinned_starter_is_what_this_compiler_makes() -> None:
    """The pinned numbers come from a compile, held here against the installed Triton when it is that version."""
    import triton

    if triton.__version__ != occ.PINNED_STARTER["triton"]:
        pytest.skip(
            f"the starter is pinned to Triton {occ.PINNED_STARTER['triton']}; this is {triton.__version__}"
        )
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    code = (
        "import json, occupancy_versions as o; "
        "d = o.describe(o.starter_kernel(), 16384, 4); "
        "print(json.dumps([d['resources'].get('registers'), d['occupancy']]))"
    )
    import os

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # another test may have set it
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root / "scripts",
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    import json

    regs, row = json.loads(proc.stdout.strip().splitlines()[-1])
    assert regs == occ.PINNED_STARTER["registers"]
    assert (row["programs_per_sm"], row["warps_per_sm"]) == (
        occ.PINNED_STARTER["programs_per_sm"],
        occ.PINNED_STARTER["warps_per_sm"],
    )
