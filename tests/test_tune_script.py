"""scripts/tune_reference_kernels.py, the one GPU call that picks the compute kernels' defaults: its plan, and a
whole run on the Triton interpreter (tiny shapes: the plumbing, not a measurement) that must not crash on a
failing variant, must check every implementation before timing it, and must write its JSON and table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "tune_reference_kernels.py"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def summary_markdown(data: dict) -> str:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from tunekit import summary
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return summary.markdown(data, compact=True)


def _run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=_env(), timeout=timeout
    )


def test_plan_lists_every_peer_and_the_defaults_first() -> None:
    pytest.importorskip("triton")
    done = _run("--list", "--only", "attention,fp8")
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for peer in (
        "sdpa_cudnn",
        "sdpa_flash",
        "sdpa_efficient",
        "sdpa_default",
        "torch.compile",
        "scaled_mm blockwise",
    ):
        assert f"peer      {peer}" in out, peer
    attention = out.split("== fp8")[0]
    variants = [line.split()[1] for line in attention.splitlines() if line.strip().startswith("variant")]
    assert variants[0] == "default", variants  # the shipped configuration is re-measured first
    assert "== attention_bwd" not in out and "== gemm" not in out


def test_bad_arguments_are_refused() -> None:
    done = _run("--only", "attention,nope")
    assert done.returncode == 2 and "--only takes attention, attention_bwd, gemm, fp8" in done.stderr
    done = _run("--budget-s", "3")
    assert done.returncode == 2 and "--budget-s must be more than" in done.stderr


@pytest.mark.skipif(
    __import__("importlib").util.find_spec("torch") is None or __import__("torch").cuda.is_available(),
    reason="needs torch, and no GPU (on a GPU the script runs for real)",
)
def test_without_a_gpu_it_refuses() -> None:
    done = _run("--out", "/tmp/never-written", "--only", "gemm")
    assert done.returncode == 2 and "needs a CUDA GPU" in done.stderr


@pytest.mark.slow
def test_smoke_run_checks_times_records_failures_and_prints_the_table_last(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    out = tmp_path / "tune"
    done = _run(
        "--smoke", "--out", str(out), "--only", "attention,fp8", "--budget-s", "75", "--warm-procs", "1",
        "--warm-s", "20", "--repeats", "2", "--rep-ms", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads((out / "tune.json").read_text())
    # the compact table is printed last (the end of a device call's output is what comes back)
    assert done.stdout.rstrip().endswith(summary_markdown(data).rstrip())
    assert "| case | fastest peer |" in (out / "tune.md").read_text()
    assert data["warm_up"] and all("ok" in r for r in data["warm_up"])
    attn = data["sections"]["attention"]["cases"][0]
    impls = attn["impls"]
    # the invalid launch is recorded with its error, never timed, and the run went on
    assert "BLOCK_M must be a multiple of BLOCK_N" in impls["invalid 24x16"]["error"]
    assert "ms" not in impls["invalid 24x16"]
    # a backend this machine lacks is reported as unavailable, not dropped
    assert "error" in impls["sdpa_cudnn"]
    # everything timed was checked first against float64, and carries its rounds and median
    timed = {n: r for n, r in impls.items() if "ms" in r}
    assert "sdpa_flash" in timed and any(r["kind"] == "variant" for r in timed.values())
    for rec in timed.values():
        assert rec["ok"] and rec["rel_err"] < 2e-3 and len(rec["ms_runs"]) >= 1
    # the default call names the backend it picked (flash on a CPU build)
    assert impls["sdpa_default"]["backend"] == "flash"
    assert attn["fastest_peer"]["name"] in ("sdpa_flash", "sdpa_default (flash)")
    assert attn["best_variant"]["x_fastest_peer"] > 0
    # the fp8 peers with coarser scales are checked against what they compute, so they are timed
    fp8 = data["sections"]["fp8"]["cases"][0]["impls"]
    assert fp8["scaled_mm rowwise"]["ok"] and "ms" in fp8["scaled_mm rowwise"]
    groups = data["summary"]["attention"]["groups"]
    assert groups and all("best" in g for g in groups.values())
    assert (out / "log.txt").read_text().count("fastest peer") >= 1
