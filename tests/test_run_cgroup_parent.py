"""Per-run cgroups (runs/cgroups/) shared by several tritonlab processes of one user."""

from __future__ import annotations

import uuid

import pytest

from tritonlab.runs.cgroups import hierarchy, rungroup


def test_a_run_group_is_made_again_after_another_process_released_the_shared_parent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two tritonlab processes in one cgroup (two check daemons, `serve` beside a CLI check) share the
    `tritonlab-runs` parent, and each removes it when it ends and the parent is empty (release()). The other
    one's next run must make it again — found on the H200, where a first check's daemon, ending, made every run
    of the next daemon fail with "cannot set up the run's cgroup"."""
    ok, why = hierarchy.available()
    if not ok:
        pytest.skip(f"no per-run cgroups here: {why}")
    monkeypatch.setattr(
        hierarchy, "RUNS", f"tritonlab-runs-test-{uuid.uuid4().hex[:8]}"
    )  # a parent of its own
    monkeypatch.setattr(hierarchy, "_made", {})
    first = rungroup.RunGroup(memory_bytes=64 << 20, pids=64)
    parents = [folder.parent for _version, folder, _used in first.folders]
    first.remove()
    for parent in parents:
        parent.rmdir()  # what the other process's release() does, the parent being empty
    second = rungroup.RunGroup(memory_bytes=64 << 20, pids=64)
    try:
        assert second.folders and all(folder.is_dir() for _version, folder, _used in second.folders)
        assert {folder.parent for _version, folder, _used in second.folders} == set(parents)
    finally:
        second.remove()
        hierarchy.release()
