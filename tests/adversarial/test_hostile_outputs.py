"""Hostile result files (issue 17): whatever a run writes is read under caps and checked before use, and a
violation is a `crash` verdict saying the run wrote malformed results — never a server error, never memory
in the parent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tritonlab.runs import rundir

HERE = Path(__file__).resolve().parent
GROWTH_LIMIT_KIB = 48 << 10  # the parent's peak RSS may grow at most 48 MiB while reading any one attack


# ---- the readers on their own (no sandbox) ---------------------------------------------------------------


def test_deep_json_is_refused_without_recursion(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(rundir.Malformed, match="nests 100000 levels"):
        rundir.read_json(path)


def test_brackets_inside_strings_do_not_count(tmp_path: Path) -> None:
    path = tmp_path / "error.json"
    message = "[" * 500 + '\\" {{{'
    path.write_text(json.dumps({"message": message, "list": [[1], [2]]}))
    assert rundir.json_depth(path.read_bytes()) == 3
    assert rundir.read_json(path)["message"] == message


def test_unterminated_escapes_scan_in_linear_time(tmp_path: Path) -> None:
    import time

    data = b'"' + b'\\"' * 2_000_000 + b"\\"
    started = time.monotonic()
    rundir.json_depth(data)
    assert time.monotonic() - started < 5


def test_json_over_the_byte_cap_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    with open(path, "wb") as f:
        f.truncate(1 << 30)  # sparse
    with pytest.raises(rundir.Malformed, match="bytes"):
        rundir.read_json(path)


def test_symlinked_json_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("{}")
    (tmp_path / "result.json").symlink_to(tmp_path / "secret")
    with pytest.raises(rundir.Malformed):
        rundir.read_json(tmp_path / "result.json")


def _sparse_npy(path: Path, shape: tuple[int, ...], descr: str = "<f4") -> None:
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": descr, "fortran_order": False, "shape": shape})
        f.truncate(f.tell() + int(np.prod(shape)) * np.dtype(descr).itemsize)


def test_npy_header_is_judged_before_loading(tmp_path: Path) -> None:
    _sparse_npy(tmp_path / "huge.npy", (100 << 20,))
    budget = rundir.NpyBudget(64 << 20)
    with pytest.raises(rundir.Malformed, match="declares 419430400 bytes"):
        rundir.read_npy(tmp_path / "huge.npy", budget, [100 << 20], 4)


def test_npy_budget_counts_every_read(tmp_path: Path) -> None:
    np.save(tmp_path / "o.npy", np.zeros(1000, dtype=np.float32))
    budget = rundir.NpyBudget(10_000)
    first = rundir.read_npy(tmp_path / "o.npy", budget, [1000], 4)
    assert first.shape == (1000,) and budget.left == 6000
    rundir.read_npy(tmp_path / "o.npy", budget, [1000], 4)
    with pytest.raises(rundir.Malformed):
        rundir.read_npy(tmp_path / "o.npy", budget, [1000], 4)


@pytest.mark.parametrize(
    ("array", "shape", "itemsize", "why"),
    [
        (np.zeros(4, dtype=np.float32), [5], 4, "shape"),
        (np.zeros(4, dtype=np.float64), [4], 4, "8-byte"),
        (np.zeros(4, dtype=np.complex64), [4], 8, "dtype"),
        (np.array([{"a": 1}], dtype=object), [1], 8, "dtype"),
        (np.zeros(2, dtype=[("a", "<i4"), ("b", "<i4")]), [2], 8, "dtype"),
    ],
)
def test_npy_must_match_what_the_result_declares(
    tmp_path: Path, array: np.ndarray, shape: list[int], itemsize: int, why: str
) -> None:
    np.save(tmp_path / "o.npy", array, allow_pickle=array.dtype.hasobject)
    with pytest.raises(rundir.Malformed, match=why):
        rundir.read_npy(tmp_path / "o.npy", rundir.NpyBudget(1 << 20), shape, itemsize)


def test_truncated_npy_is_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "o.npy", np.zeros(1000, dtype=np.float32))
    with open(tmp_path / "o.npy", "r+b") as f:
        f.truncate(500)
    with pytest.raises(rundir.Malformed, match="shorter"):
        rundir.read_npy(tmp_path / "o.npy", rundir.NpyBudget(1 << 20), [1000], 4)


# ---- through the real service, sandbox and grader, in a separate process whose memory is measured --------


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> dict:
    work = tmp_path_factory.mktemp("hostile")
    env = dict(os.environ, TRITONLAB_HOME=str(work / "home"))
    proc = subprocess.run(
        [sys.executable, str(HERE / "hostile_probe.py"), str(work)],
        capture_output=True,
        text=True,
        timeout=500,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _malformed_crash(entry: dict) -> None:
    assert not entry["passed"]
    assert [kind for kind, _ in entry["failures"]] == ["crash"], entry["failures"]
    assert entry["failures"][0][1].startswith("the run wrote malformed results: ")


def test_sparse_huge_npy_named_many_times(probe: dict) -> None:
    entry = probe["huge_npy_many"]
    _malformed_crash(entry)
    assert "declares 419430400 bytes" in entry["failures"][0][1]
    assert entry["growth_kib"] < GROWTH_LIMIT_KIB, entry


def test_deeply_nested_result_json(probe: dict) -> None:
    entry = probe["deep_json"]
    _malformed_crash(entry)
    assert "nests 100001 levels" in entry["failures"][0][1]
    assert entry["growth_kib"] < GROWTH_LIMIT_KIB, entry


def test_deeply_nested_error_json_of_a_program_run(probe: dict) -> None:
    entry = probe["deep_json_run"]
    assert entry["error"]["type"] == "MalformedResult"
    assert "nests 100001 levels" in entry["error"]["message"]
    assert entry["growth_kib"] < GROWTH_LIMIT_KIB, entry


def test_huge_declared_viz_tensor(probe: dict) -> None:
    entry = probe["huge_viz"]
    assert entry["malformed"].startswith("the run wrote malformed results: ")
    assert "4000, 5000" in entry["malformed"]
    assert entry["process_failure"]["kind"] == "crash"
    assert entry["cases"] == 0
    assert entry["growth_kib"] < GROWTH_LIMIT_KIB, entry


def test_service_recovers_after_hostile_files(probe: dict) -> None:
    assert probe["warm_passed"] and probe["recovered"]
