"""How many runs a machine takes at once (runs/capacity.py), the run queue and warm pool sized from it, and
TRITONLAB_SLOTS. The machine's figures are replaced by an H200 host's (16 cores, 128 GiB, 141 GiB of GPU memory)
and a small one's; the formulas are those docs/reliability.md ("Runs at once") states."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonlab.runs import capacity, pool
from tritonlab.service import Service

GIB = 1 << 30
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "course"


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """Set the machine's cores, host memory and GPU memory: machine(cores, host_gib, gpu_gib)."""
    monkeypatch.delenv(capacity.ENV, raising=False)
    monkeypatch.delenv("TRITONLAB_GPU_MEMORY_GIB", raising=False)

    def set_to(cores: int, host_gib: float, gpu_gib: float | None) -> None:
        monkeypatch.setattr(capacity, "cores", lambda: cores)
        monkeypatch.setattr(capacity, "host_memory", lambda: int(host_gib * GIB))
        monkeypatch.setattr(capacity, "gpu_memory", lambda gpu=None: int(gpu_gib * GIB) if gpu_gib else None)

    return set_to


def test_an_h200_host_takes_as_many_gpu_runs_as_its_tightest_resource(machine, monkeypatch) -> None:  # noqa: ANN001
    machine(16, 128, 141)
    slots = capacity.slots("gpu")
    # cores 16 // 2 = 8; host 0.8 * 128 / 16 = 6; GPU (141 - 1) / (16 + 0.5) = 8
    assert slots.count == 6 and "host memory" in slots.reason.split("(")[0], slots.reason
    monkeypatch.setenv("TRITONLAB_GPU_MEMORY_GIB", "40")
    assert capacity.slots("gpu").count == 3  # (141 - 1) / 40.5: the GPU memory binds


def test_the_interpreter_takes_a_run_per_core_and_at_least_two(machine) -> None:  # noqa: ANN001
    machine(16, 128, None)
    assert capacity.slots("interpreter").count == 16
    machine(1, 64, None)
    assert capacity.slots("interpreter").count == 2
    machine(16, 8, None)
    assert capacity.slots("interpreter").count == 2  # 0.8 * 8 / 3: host memory binds


def test_a_gpu_whose_memory_is_unknown_is_sized_by_the_host(machine) -> None:  # noqa: ANN001
    machine(4, 64, None)
    assert capacity.slots("gpu").count == 2


def test_tritonlab_slots_overrides_and_a_bad_value_is_refused(machine, monkeypatch, tmp_path) -> None:  # noqa: ANN001
    machine(16, 128, 141)
    monkeypatch.setenv(capacity.ENV, "12")
    assert capacity.slots("gpu") == capacity.Slots(12, "TRITONLAB_SLOTS=12")
    monkeypatch.setenv(capacity.ENV, "1000")
    assert capacity.slots("gpu").count == capacity.MAX_SLOTS
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv(capacity.ENV, bad)
        with pytest.raises(capacity.SlotsError, match="positive whole number"):
            capacity.slots("gpu")
        with pytest.raises(capacity.SlotsError):  # the service refuses to start, with the reason
            Service(course_dir=FIXTURE, workspace_dir=tmp_path / "ws", backend="interpreter")


def test_the_queue_and_the_warm_pool_follow_the_machine(machine, monkeypatch, tmp_path) -> None:  # noqa: ANN001
    machine(16, 128, 141)
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    service = Service(course_dir=FIXTURE, workspace_dir=tmp_path / "ws", backend="interpreter")
    try:
        assert service.gate().size == 16  # never started a worker: the gate is sized from the machine alone
        assert service.run_slots("gpu").count == 6
        service.slots = 3  # dev check --jobs
        assert service.run_slots("gpu").count == 3
    finally:
        service.close()
    monkeypatch.delenv("TRITONLAB_POOL", raising=False)
    assert pool.wanted("gpu", hardened=True, slots=6, bound=True) == 7
    assert pool.wanted("gpu", hardened=False, slots=20) == pool.MAX_POOL


@pytest.mark.parametrize(
    "mode", ["run", "check", "replay", "speed_record", "inspect", "speed", "bench", "profile"]
)
def test_a_job_that_times_the_gpu_asks_the_queue_for_it_alone(mode: str, monkeypatch, home) -> None:  # noqa: ANN001
    """service/jobs.py run_job takes the exclusive class from the job's mode (runs/capacity.py:TIMING_MODES, the
    list the Ray pool uses too), on a machine whose GPU runs take it alone (`exclusive_runs`), never elsewhere."""
    from tritonlab.service import Service

    class Asked(Exception):
        pass

    service = Service(backend="interpreter")
    try:
        gate = service.gate()
        asked: list[bool] = []

        def acquire(on_wait=None, *, owner=None, exclusive=False, idle_wait=None):  # noqa: ANN001, ANN202
            asked.append(exclusive)
            raise Asked  # what the queue was asked is the subject: no run starts

        monkeypatch.setattr(gate, "acquire", acquire)
        monkeypatch.setattr(service, "zygote", lambda: None)
        for gpu_here in (True, False):
            monkeypatch.setattr(service, "exclusive_runs", lambda gpu_here=gpu_here: gpu_here)
            with pytest.raises(Asked):
                service.run_job({"mode": mode, "file": "x.py"}, "result.json")
        assert asked == [mode in {"speed", "bench", "profile"}, False]
    finally:
        service.close()
