"""`make gpu-verify`: the GPU machine's substitute for CI, in one call of at most ~10 minutes.

Runs, each step timed and bounded: the environment (GPU, driver, Triton, torch), `tritonlab doctor --json` on the
GPU backend, this GPU's measured roof, the first check after install (a fresh TRITONLAB_HOME: cold Triton cache),
repeated checks of correct files through the real CLI and through one long-lived Service (what `serve` and
`watch` do: the warm-worker pool and the cases drawn ahead), the speed line of a passing check (CLI text and
JSON), a breakdown of where a GPU check's time goes, the GPU-marked tests and `tritonlab dev check --backend
gpu`. Writes `gpu-verify.json` (everything) and `gpu-verify.md` (a summary) into --out. Budget: ≤ 9 minutes
on an H200 (`--repeats` lowers it).

Works from an installed tritonlab or a source checkout (PYTHONPATH=src): the CLI is `python -m tritonlab`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "tritonlab"]
BUDGET_S = 530.0  # the whole script, so that one 10-minute GPU call always brings the report back


def sh(argv: list[str], timeout: float, env: dict | None = None) -> dict:
    """Run a command; its exit code, wall seconds and the tail of its output (never raises)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = "timeout", str(exc.stdout or ""), str(exc.stderr or "")
    return {
        "argv": " ".join(argv[2:] if argv[:2] == [sys.executable, "-m"] else argv),
        "code": code,
        "seconds": round(time.perf_counter() - start, 2),
        "stdout": out[-6000:],
        "stderr": err[-3000:],
    }


def environment() -> dict:
    info: dict = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
    }
    smi = sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], 30)
    info["gpu"] = smi["stdout"].strip()
    probe = sh(
        [sys.executable, "-c", "import torch, triton; print(torch.__version__, triton.__version__)"],
        120,
    )
    parts = probe["stdout"].split()
    info["torch"], info["triton"] = (parts + [None, None])[:2]
    return info


SERVICE_PROBE = r"""
import json, statistics, sys, time
from tritonlab.service import Service
started = time.perf_counter()
service = Service(backend="gpu")
service.warm_up()
out = {"pool": None, "exercises": []}
for exercise_id, repeats in json.loads(sys.argv[1]):
    exercise = service.exercise(exercise_id)
    runs = []
    for _ in range(repeats):
        s = time.perf_counter()
        verdict = service.check(exercise, file=exercise.solution, record=False)
        runs.append({"wall_s": round(time.perf_counter() - s, 3), "passed": verdict.passed,
                     "inside_s": round(verdict.duration_s, 3), "speed": verdict.speed})
    walls = [r["wall_s"] for r in runs]
    out["exercises"].append({"exercise": exercise_id, "runs": runs, "first_wall_s": walls[0],
                             "median_wall_s": statistics.median(walls),
                             "median_after_first_s": statistics.median(walls[1:] or walls)})
out["pool"] = service.zygote().pool
out["total_s"] = round(time.perf_counter() - started, 2)
service.close()
print(json.dumps(out))
"""


def service_checks(plan: list[tuple[str, int]], env: dict) -> dict:
    """Checks through one long-lived Service (a web-like caller): wall seconds of each `service.check`."""
    r = sh([sys.executable, "-c", SERVICE_PROBE, json.dumps(plan)], 300, env)
    try:
        return json.loads(r["stdout"].strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": r["stderr"][-1500:], "code": r["code"]}


def speed_report(env: dict) -> dict:
    """The speed line of a passing GPU check, as a learner sees it (CLI text) and as tools read it (JSON)."""
    text = sh([*CLI, "check", "softmax", "--solution", "--backend", "gpu"], 200, env)
    js = sh([*CLI, "check", "vector-add", "--solution", "--backend", "gpu", "--json"], 200, env)
    try:
        verdict = json.loads(js["stdout"])
    except ValueError:
        verdict = {}
    lines = [line for line in text["stdout"].splitlines() if line.startswith("speed")]
    return {
        "cli_text": text["stdout"][-1500:],
        "cli_speed_line": lines[-1] if lines else None,
        "json_speed": verdict.get("speed"),
        "json_passed": verdict.get("passed"),
        "codes": [text["code"], js["code"]],
    }


MEASURE_PEAKS = "from tritonlab import config; config.use_trusted_triton_cache(); from tritonlab.perf.peaks import get_peaks; import json; print(json.dumps(get_peaks()))"


def timed_checks(exercise: str, repeats: int, env: dict) -> dict:
    """`check EXERCISE --solution --json` through the CLI, `repeats` times: wall seconds per call."""
    runs = []
    for _ in range(repeats):
        r = sh([*CLI, "check", exercise, "--solution", "--backend", "gpu", "--json"], 300, env)
        try:
            verdict = json.loads(r["stdout"])
        except ValueError:
            verdict = {}
        runs.append(
            {
                "wall_s": r["seconds"],
                "passed": verdict.get("passed"),
                "inside_s": verdict.get("duration_s"),
                "code": r["code"],
                "speed": verdict.get("speed"),
            }
        )
    walls = [r["wall_s"] for r in runs]
    return {
        "exercise": exercise,
        "runs": runs,
        "median_wall_s": statistics.median(walls),
        "first_wall_s": walls[0],
    }


BREAKDOWN = r"""
import json, os, time, sys
t = {}
s = time.perf_counter(); import tritonlab.cli.app; t["cli_import_s"] = time.perf_counter() - s
s = time.perf_counter(); import numpy, torch; t["torch_import_s"] = time.perf_counter() - s
s = time.perf_counter(); import triton, triton.language as tl; t["triton_import_s"] = time.perf_counter() - s
s = time.perf_counter(); torch.zeros(1, device="cuda"); torch.cuda.synchronize(); t["cuda_init_s"] = time.perf_counter() - s

@triton.jit
def _copy(x, y, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)

x = torch.randn(1 << 20, device="cuda"); y = torch.empty_like(x)
s = time.perf_counter(); _copy[(x.numel() // 1024,)](x, y, x.numel(), BLOCK=1024); torch.cuda.synchronize()
t["first_launch_s"] = time.perf_counter() - s
s = time.perf_counter(); _copy[(x.numel() // 1024,)](x, y, x.numel(), BLOCK=1024); torch.cuda.synchronize()
t["warm_launch_s"] = time.perf_counter() - s
s = time.perf_counter(); h = torch.randn(4096, 4096, dtype=torch.float64); h.to("cuda"); torch.cuda.synchronize()
t["upload_128MiB_s"] = time.perf_counter() - s
print(json.dumps({k: round(v, 4) for k, v in t.items()}))
"""


def breakdown(env: dict) -> dict:
    """Where a GPU check's time goes, piece by piece, in a fresh process (a cold and a warm Triton cache)."""
    out = {}
    script = Path(env["TRITONLAB_HOME"]) / "breakdown_probe.py"  # @triton.jit needs its source in a file
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(BREAKDOWN)
    for label in ("cold_cache", "warm_cache"):
        r = sh([sys.executable, str(script)], 300, env)
        try:
            out[label] = json.loads(r["stdout"].strip().splitlines()[-1])
        except (ValueError, IndexError):
            out[label] = {"error": r["stderr"][-800:]}
    return out


def summary_md(report: dict) -> str:
    e = report["environment"]
    lines = [
        "# GPU verification run",
        "",
        f"- date: {e['date']}; GPU: {e['gpu']}; torch {e['torch']}; triton {e['triton']}; python {e['python']}",
        f"- git commit: {report.get('commit')}; whole script {report.get('total_s')} s",
        "",
        "| step | result | seconds |",
        "|---|---|---|",
    ]
    for name, step in report["steps"].items():
        lines.append(
            f"| {name} | {'ok' if step['code'] == 0 else 'exit ' + str(step['code'])} | {step['seconds']} |"
        )
    lines += ["", "## Check latency through the CLI (correct file, `--backend gpu`)", ""]
    lines += ["| exercise | first (s) | median (s) | runs (wall s) | all passed |", "|---|---|---|---|---|"]
    for c in report["latency"]:
        walls = ", ".join(str(r["wall_s"]) for r in c["runs"])
        ok = all(r["passed"] for r in c["runs"])
        lines.append(f"| {c['exercise']} | {c['first_wall_s']} | {c['median_wall_s']} | {walls} | {ok} |")
    first = report.get("first_check", {})
    lines += [
        "",
        f"First check after install (fresh TRITONLAB_HOME, cold Triton cache): `{first.get('argv')}` "
        f"{first.get('seconds')} s, exit {first.get('code')}",
    ]
    svc = report.get("service", {})
    lines += ["", f"## Check latency through one Service (web-like; pool={svc.get('pool')})", ""]
    lines += ["| exercise | first (s) | median (s) | median after first (s) | runs (wall s) | all passed |"]
    lines += ["|---|---|---|---|---|---|"]
    for c in svc.get("exercises", []):
        walls = ", ".join(str(r["wall_s"]) for r in c["runs"])
        ok = all(r["passed"] for r in c["runs"])
        lines.append(
            f"| {c['exercise']} | {c['first_wall_s']} | {c['median_wall_s']} | {c['median_after_first_s']} "
            f"| {walls} | {ok} |"
        )
    if "error" in svc:
        lines.append(f"- service probe failed: {svc['error'][-600:]}")
    speed = report.get("speed", {})
    lines += ["", "## Speed line of a passing check", ""]
    lines.append(f"- CLI (softmax): {speed.get('cli_speed_line')}")
    lines.append(f"- JSON (vector-add): `{json.dumps(speed.get('json_speed'))}`")
    lines.append(f"- roof: `{json.dumps(report.get('peaks'))[:300]}`")
    lines += ["", "## Breakdown of a GPU run's fixed costs (fresh process)", ""]
    for label, parts in report["breakdown"].items():
        lines.append(f"- {label}: " + ", ".join(f"{k} {v}" for k, v in parts.items()))
    sandbox = report.get("doctor", {}).get("sandbox", {})
    lines += ["", f"## Sandbox on the GPU (doctor): hardened={sandbox.get('hardened')}", ""]
    lines.append(f"- reason: {sandbox.get('reason')}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-devcheck", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    # The background workers the CLI checks start end a minute after the script (instead of ten).
    env = dict(
        os.environ, TRITONLAB_HOME=str(args.out / "home"), PYTHONUNBUFFERED="1", TRITONLAB_DAEMON_IDLE="60"
    )
    report: dict = {"environment": environment(), "steps": {}}
    # A copy of the tree sent to a GPU machine may carry no (or a stale) .git: the caller can name the commit.
    report["commit"] = (
        os.environ.get("TRITONLAB_COMMIT")
        or sh(["git", "rev-parse", "--short", "HEAD"], 10)["stdout"].strip()
    )

    doctor = sh([*CLI, "doctor", "--json", "--backend", "gpu"], 300, env)
    report["steps"]["doctor"] = doctor
    try:
        report["doctor"] = json.loads(doctor["stdout"])
    except ValueError:
        report["doctor"] = {}
    print("doctor", doctor["code"], doctor["seconds"], flush=True)

    def save() -> None:  # after every step, so a run cut short still leaves what it measured
        (args.out / "gpu-verify.json").write_text(json.dumps(report, indent=1))

    save()
    # The very first check of a new install: nothing compiled yet, no roof measured (no % of roof yet).
    fresh = dict(env, TRITONLAB_HOME=str(args.out / "home-fresh"))
    report["first_check"] = sh(
        [*CLI, "check", "vector-add", "--solution", "--backend", "gpu", "--json"], 300, fresh
    )
    print("first check", report["first_check"]["code"], report["first_check"]["seconds"], flush=True)
    peaks = sh([sys.executable, "-c", MEASURE_PEAKS], 300, env)
    try:
        report["peaks"] = json.loads(peaks["stdout"].strip().splitlines()[-1])
    except (ValueError, IndexError):
        report["peaks"] = {"error": peaks["stderr"][-800:]}
    print("peaks", peaks["code"], peaks["seconds"], flush=True)
    report["speed"] = speed_report(env)
    print("speed", report["speed"]["cli_speed_line"], flush=True)
    save()
    report["service"] = service_checks(
        [("vector-copy", args.repeats), ("softmax", args.repeats), ("matmul", 3)], env
    )
    print("service", json.dumps(report["service"])[:400], flush=True)
    save()
    report["latency"] = []
    for exercise, n in (("vector-copy", args.repeats), ("softmax", 3)):
        report["latency"].append(timed_checks(exercise, n, env))
        print(
            "latency", report["latency"][-1]["exercise"], report["latency"][-1]["median_wall_s"], flush=True
        )
    report["breakdown"] = breakdown(env)
    report["steps"]["gpu-tests"] = sh(
        [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider"], 300, env
    )
    print("gpu tests", report["steps"]["gpu-tests"]["code"], flush=True)
    if not args.skip_devcheck:  # the last step gets what is left of the 9 minutes
        left = max(60.0, BUDGET_S - (time.perf_counter() - started))
        report["steps"]["dev-check-gpu"] = sh([*CLI, "dev", "check", "--backend", "gpu"], left, env)
        print("dev check", report["steps"]["dev-check-gpu"]["code"], flush=True)
    report["total_s"] = round(time.perf_counter() - started, 1)
    (args.out / "gpu-verify.json").write_text(json.dumps(report, indent=1))
    (args.out / "gpu-verify.md").write_text(summary_md(report))
    print(summary_md(report))
    return 0 if all(s["code"] == 0 for s in report["steps"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
