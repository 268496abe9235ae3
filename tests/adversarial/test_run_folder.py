"""A capped run directory (issue 17): each run directory is its own tmpfs (size= and nr_inodes=), so a run
that writes 300k files or more bytes than the cap is refused inside its own folder, stopped by the parent
and reported, and nothing lands on the disk of the database and workspaces."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import LEARNERS, Bench  # noqa: E402

from tritonlab.runs import runfolder  # noqa: E402
from tritonlab.runs.collect import RunResult  # noqa: E402
from tritonlab.runs.limits import Limits  # noqa: E402

pytestmark = pytest.mark.skipif(not runfolder.wanted(), reason="a per-run tmpfs needs root (mount)")


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    b = Bench(tmp_path)
    yield b
    b.close()


def flood(bench: Bench, mode: str) -> tuple[RunResult, bool]:
    run_dir = runfolder.new_run_dir()
    capped = runfolder.Path(run_dir).is_mount()
    try:
        job = {"mode": "run", "file": str(LEARNERS / "file_flood.py"), "argv": [mode]}
        (run_dir / "job.json").write_text(json.dumps(job))
        limits = Limits(wall_seconds=30, cpu_seconds=40)
        result = bench.service.zygote().start(run_dir, limits).wait()
    finally:
        runfolder.remove_run_dir(run_dir)
    assert not run_dir.exists() and not run_dir.is_mount()
    return result, capped


def test_a_run_writing_300k_files_is_stopped_at_the_cap(bench: Bench) -> None:
    result, capped = flood(bench, "files")
    assert capped, "the run directory should be its own tmpfs"
    assert "refused: never" not in result.output, result.output
    made = int(result.output.split("made ")[1].split(" ")[0])
    assert made < runfolder.RUN_FOLDER_FILES, result.output
    assert "run folder" in result.limits_hit and "files" in result.folder_full, result
    assert result.seconds < 15, "the parent should stop a run whose folder is full, not wait for its timeout"


def test_a_run_writing_more_bytes_than_the_cap_is_stopped(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runfolder, "RUN_FOLDER_BYTES", 32 << 20)
    result, capped = flood(bench, "bytes")
    assert capped
    if "made " in result.output:  # the parent may stop it before it saw ENOSPC itself
        assert int(result.output.split("made ")[1].split(" ")[0]) <= 32, result.output
    assert "run folder" in result.limits_hit and "MiB" in result.folder_full, result
    assert result.seconds < 15


def test_doctor_claims_the_cap_only_after_a_probe_folder_refused() -> None:
    report = runfolder.probe()
    assert report["capped"] is True, report
    assert "refused the file after" in report["reason"]
