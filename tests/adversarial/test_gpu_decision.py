"""`auto` on a GPU (issue 17, round 3): the hardened layer only when its probe verified a Triton kernel inside
bubblewrap, as the unprivileged sandbox user; otherwise fail closed. On this machine (no GPU) the real probe
runs with the GPU's bind list up to the point where CUDA is needed, and must say that CUDA is what failed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonlab.grading import harness
from tritonlab.runs import hardening, pool
from tritonlab.runs.limits import GPU_MEMORY, default_limits

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")


@pytest.fixture
def sandbox_mode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.setenv("TRITONLAB_HOME", str(tmp_path / "home"))
    hardening._probe.cache_clear()
    yield monkeypatch
    hardening._probe.cache_clear()


@needs_bwrap
def test_gpu_probe_runs_the_walls_then_needs_cuda(sandbox_mode: pytest.MonkeyPatch) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: tests/adversarial/test_gpu_runs.py checks the real thing")
    sandbox_mode.setenv("TRITONLAB_SANDBOX", "auto")
    report = hardening.probe("gpu")
    ev = report["evidence"]
    if "uid" not in ev:
        pytest.skip(f"bubblewrap cannot start a sandbox here: {report['reason']}")
    # The walls were checked inside the very sandbox a GPU run would get (device nodes bound when present)...
    assert ev["uid"] != 0 and ev["network"] is False and ev["isolated"] is True, ev
    # the six walls of the sandbox, and the two each run adds inside it (runs/pidns.py, runs/rootview.py)
    assert len(report["layers"]) == 8, report["layers"]
    assert any("PID namespace of its own" in layer for layer in report["layers"]), report["layers"]
    assert any("root of its own" in layer for layer in report["layers"]), report["layers"]
    # ...then CUDA was tried as the sandbox user, and that is what failed: fail closed.
    assert ev["cuda"] == {
        "ok": False,
        "step": "find a CUDA device",
        "error": "torch sees no CUDA device inside the sandbox",
    }
    assert report["hardened"] is False
    assert "CUDA inside the sandbox" in report["reason"] and "find a CUDA device" in report["reason"]
    use, why = hardening.decide("gpu")
    assert use is False and why == report["reason"]
    sandbox_mode.setenv("TRITONLAB_SANDBOX", "hardened")
    with pytest.raises(hardening.Unavailable, match="CUDA inside the sandbox"):
        hardening.decide("gpu")


def walls(**cuda: object) -> dict:
    ev = {
        "uid": 65534,
        "regained_root": False,
        "cap_eff": "0000000000000000",
        "network": False,
        "sees_data_dir": False,
        "isolated": True,
        "sees_other_run": False,
        "writes_course": False,
        "writes_elsewhere": [],
        "writes_run_dir": True,
        "sees_parent": False,
        "nproc_enforced": True,
    }
    return ev | ({"cuda": cuda} if cuda else {})


def test_judge_needs_the_cuda_kernel_on_a_gpu() -> None:
    who = hardening.Identity("nobody", 65534, 65534, drop=True)
    ok = hardening.judge({}, walls(ok=True, step="done", device="NVIDIA H200"), who)
    assert ok["hardened"] is True and any("NVIDIA H200" in layer for layer in ok["layers"])
    broken = hardening.judge(
        {}, walls(ok=False, step="compile and launch a Triton kernel", error="ptxas"), who
    )
    assert broken["hardened"] is False and "compile and launch a Triton kernel: ptxas" in broken["reason"]
    assert hardening.judge({}, walls(), who)["hardened"] is True  # the interpreter: no CUDA to check


def test_probe_environment_tells_the_sandbox_where_libcuda_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_LIBCUDA_PATH", "/opt/driver/lib")
    monkeypatch.setenv("SECRET_TOKEN", "never")
    env = hardening.probe_environment("gpu", "/src", Path("/runs/probe-x"))
    assert env["TRITON_LIBCUDA_PATH"] == "/opt/driver/lib" and env["HOME"] == "/runs/probe-x"
    assert "SECRET_TOKEN" not in env
    assert "TRITON_LIBCUDA_PATH" not in hardening.probe_environment("interpreter", "/src", Path("/r"))


def test_gpu_runs_carry_a_soft_memory_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITONLAB_GPU_MEMORY_GIB", "2")
    assert default_limits("gpu").for_child()["gpu_memory_bytes"] == 2 << 30
    assert default_limits("interpreter").for_child()["gpu_memory_bytes"] is None
    monkeypatch.setenv("TRITONLAB_GPU_MEMORY_GIB", "lots")
    assert default_limits("gpu").gpu_memory_bytes == GPU_MEMORY


def test_an_allocation_over_the_cap_names_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    if not torch.cuda.is_available():
        assert pool.soft_gpu_cap(1 << 30) is None  # no device: nothing to cap, nothing claimed
        assert pool.GPU_CAP_ENV not in os.environ
    monkeypatch.setenv(pool.GPU_CAP_ENV, str(2 << 30))
    try:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB")
    except torch.cuda.OutOfMemoryError as exc:
        info = harness.describe_exception(exc, "/nowhere/learner.py")
    assert info["type"] == "OutOfMemoryError"
    assert info["hint"].startswith("this run went over its GPU memory cap (2.0 GiB, a soft cap")


@needs_bwrap
def test_the_local_cli_on_such_a_gpu_runs_on_layer_1_with_a_warning(sandbox_mode: pytest.MonkeyPatch) -> None:
    """The service's own decision for a GPU worker (no GPU here: the backend choice is set as a GPU machine
    would make it): not hardened, and the single-user CLI is told why (cli/common.make_service prints it)."""
    import torch

    from tritonlab.runs import backend
    from tritonlab.service import Service

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: tests/adversarial/test_gpu_runs.py checks the real thing")
    sandbox_mode.setenv("TRITONLAB_SANDBOX", "auto")
    course = Path(__file__).resolve().parents[1] / "fixtures" / "course"
    service = Service(course_dir=course, workspace_dir=Path(os.environ["TRITONLAB_HOME"]) / "ws")
    service._choice = backend.Choice("gpu", "as a GPU machine would choose")
    said: list[str] = []
    service.on_unhardened = said.append
    try:
        zygote = service.zygote()
        assert service.hardened is False and zygote.hardened is False
    finally:
        service.close()
    assert len(said) == 1 and said[0].startswith("WARNING: GPU runs use sandbox layer 1 only"), said
    assert "CUDA inside the sandbox" in said[0]
