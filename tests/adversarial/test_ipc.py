"""SysV shared memory (issue 17): a segment a run leaves behind dies with the run (a private IPC namespace
per run), so the next run cannot read it and the host never sees it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import Bench, Case, no_leak  # noqa: E402

KEY = 0x1717
CASE = Case(
    "SysV shared memory left for the next run",
    "sysv_shm.py",
    "private IPC namespace per run",
    no_leak(),
    "run",
    20,
)


def host_has_segment() -> bool:
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return any(int(line.split()[0]) == KEY for line in lines)


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    b = Bench(tmp_path)
    yield b
    b.close()
    if host_has_segment():  # containment failed: do not leave it for others
        subprocess.run(["ipcrm", "-M", hex(KEY)], check=False)


def test_shared_memory_does_not_outlive_the_run(bench: Bench) -> None:
    if host_has_segment():
        pytest.skip("a segment with the test's key exists on this machine already")
    first = bench.run(CASE)
    assert "left a segment" in first.outcome.output, first.outcome.output
    second = bench.run(CASE)
    assert "LEAK" not in second.outcome.output, second.outcome.output
    assert "refused" in second.outcome.output
    assert not host_has_segment(), "a run's segment is visible on the host"
