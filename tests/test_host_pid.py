"""runs/cgroups/rungroup.py `host_pid`: a run's held child is found by walking the kernel's list of children
down from the zygote, not by reading every process of the machine (under the lessons 2-8 load that scan was a
tenth of the server's sampled time); a child the list misses is still found, through the whole /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from tritonlab.runs.cgroups import rungroup


@pytest.fixture
def tree():
    """sh, and below it a sleep: (the sh's pid, the sleep's pid)."""
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(proc.stdout.readline())
        deadline = time.monotonic() + 5
        while grandchild not in rungroup._listed_children(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        yield proc.pid, grandchild
    finally:
        proc.kill()
        proc.wait()
        try:  # the sleep, orphaned by its shell's end: this one only, not every `sleep 30` of the machine
            os.kill(grandchild, signal.SIGKILL)
        except (OSError, NameError):
            pass


def test_the_held_child_is_found_without_reading_the_whole_proc(tree, monkeypatch) -> None:
    below, inner = tree
    scans = []
    real = rungroup._children
    monkeypatch.setattr(rungroup, "_children", lambda: scans.append(1) or real())
    assert rungroup.host_pid(inner, below, tag="x") == inner
    assert scans == []  # the kernel's list of children was enough
    assert rungroup.host_pid(999_999_999, below, tag="x") is None  # nobody of that pid below it
    assert scans == [1]  # a miss looks again in the whole /proc


def test_a_child_the_kernels_list_misses_is_found_in_the_whole_proc(tree, monkeypatch) -> None:
    below, inner = tree
    monkeypatch.setattr(rungroup, "_listed_children", lambda pid: [])
    assert rungroup.host_pid(inner, below, tag="x") == inner
