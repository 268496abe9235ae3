"""The adversarial suite in CI: every case contained, or skipped with the reason (see cases.py)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, MODES, Bench, Case, bench_in_mode  # noqa: E402


def bwrap_present() -> bool:
    return shutil.which("bwrap") is not None


# Every case runs under both layers: basic (TRITONLAB_SANDBOX=basic, what a machine without bubblewrap gets)
# and auto (hardened when the machine allows it), so CI proves containment with and without bubblewrap.
@pytest.fixture(scope="module", params=MODES)
def bench(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    if request.param == "auto" and not bwrap_present():
        pytest.skip("TRITONLAB_SANDBOX=auto: bubblewrap (bwrap) is not installed; `make system-deps`")
    yield from bench_in_mode(request.param, tmp_path_factory.mktemp(f"adversarial-{request.param}"))


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
    from tritonlab.runs import hardening

    assert bench.service.hardened in (True, False), "the layer must be known once the worker started"
    assert bench.zygote.hardened is bench.service.hardened  # the worker really runs under what is reported
    if os.environ["TRITONLAB_SANDBOX"] == "basic":
        assert bench.hardened is False and "TRITONLAB_SANDBOX=basic" in bench.service.hardened_reason
    else:  # auto: hardened exactly when this machine's probe says the layer works
        assert bench.hardened is hardening.decide("interpreter")[0]
    if not bench.hardened:
        assert bench.service.hardened_reason, "a basic-only run must say why the hardened layer is missing"


def start_time(pid: int) -> str:
    """A process's start time (field 22 of /proc/PID/stat): tells a survivor from a new process on the PID."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def test_kill_parent_only_hits_the_zygote_the_test_owns(bench: Bench) -> None:
    """The attack kills its parent. PID 1 and this pytest process always survive. In a PID namespace of its
    own (runs/pidns.py; the worker's proved walls) its parent is the run's init, which takes no signal from
    inside: nothing dies, the worker included. Without one, what it killed must be the zygote this test
    started, and nothing else, and a fresh zygote takes over."""
    case = next(c for c in CASES if c.file == "kill_parent.py")
    zygote = bench.service.zygote()
    zygote.wait_ready()
    init_started, own_started = start_time(1), start_time(os.getpid())
    record = bench.run(case)
    assert start_time(1) == init_started and start_time(os.getpid()) == own_started
    output = record.outcome.output
    assert "spared 1" not in output, output
    killed = [int(w) for line in output.splitlines() if line.startswith("killed ") for w in line.split()[1:2]]
    if zygote.info["walls"]["pid"]:
        assert not killed and "still alive after SIGKILL" in output, output
        assert zygote.proc.poll() is None and bench.service.zygote() is zygote, "the worker died"
    elif not bench.hardened:  # outside a PID namespace the PID it saw is the zygote's real one
        assert killed == [zygote.proc.pid], output
        assert zygote.proc.wait(10) == -9
    assert record.problem is None and record.recovery_s < 30, record.problem
