"""`--executor ray` on a GPU machine, in one call that always ends: a one-node Ray cluster (token auth) on this
machine's GPU(s), `tritonlab check --executor ray --backend gpu`, 20 checks submitted at once through Ray.

    python scripts/ray_gpu_verify.py --out DIR [--budget 300] [--checks 20] [--compare-local] [--tests]

Needs `ray` importable (pip install 'tritonlab[ray]', or wheels installed with `pip install --no-deps
--target`, see docs/scale.md). Writes DIR/ray-gpu-verify.json after EVERY step, so a run cut short keeps what
it measured, and DIR/throughput-ray.json (every verdict) from the throughput step. Each step prints its
argv/exit/seconds and its stdout's summary. `--budget` seconds (default 300) bound the whole script: a step
gets at most what is left (minus the clean-up reserve) and steps that no longer fit are skipped and listed.
`--compare-local` adds the same throughput through `--executor local`; `--tests` runs
tests/test_ray_executor.py (interpreter, 1-3 minutes) when the budget still allows it. Ends exactly the Ray
processes it started, also on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESERVE_S = 15.0  # kept back for stopping the cluster and writing the JSON
RUNNING: list[subprocess.Popen] = []  # the step in flight, ended with its group if this script is stopped


class Budget:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.started) - RESERVE_S


def summary_of(stdout: str) -> object:
    """What a step's stdout says in short: the fields that matter of a JSON verdict or report, else its last
    non-empty line."""
    text = stdout.strip()
    try:
        data = json.loads(text)
    except ValueError:
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            return ""
        try:
            data = json.loads(lines[-1])
        except ValueError:
            return lines[-1][-600:]
    if not isinstance(data, dict):
        return data
    if "verdicts" in data or "checks_per_minute" in data:  # ray_throughput.py
        keep = ("executor", "backend", "workers", "checks", "passed", "all_passed", "wall_s")
        keep += ("checks_per_minute", "latency_s", "queue_wait_s", "workers_ready_s", "warm_children")
        keep += ("phase_medians_s", "sandbox", "payload_mb_max")
        return {k: data[k] for k in keep if k in data}
    if "passed" in data:  # a check verdict
        keep = ("exercise", "passed", "backend", "duration_s", "executor", "node", "timings", "speed")
        out = {k: data[k] for k in keep if k in data}
        out["failures"] = [f.get("message", "")[:200] for f in data.get("failures", [])][:3]
        return out
    return data


def sh(argv: list[str], env: dict, timeout: float) -> dict:
    """Run one step in its own session; on timeout its whole process group is killed."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    RUNNING.append(proc)
    try:
        out, err = proc.communicate(timeout=max(1.0, timeout))
        code: int | str = proc.returncode
    except subprocess.TimeoutExpired:
        end_group(proc)
        out, err = proc.communicate()
        code = "timeout"
    finally:
        RUNNING.remove(proc)
    result = {"argv": " ".join(argv), "code": code, "seconds": round(time.perf_counter() - start, 2)}
    result["timeout_s"] = round(timeout, 1)
    result["summary"] = summary_of(out or "")
    if not result["summary"] and err and err.strip():  # nothing on stdout: say why, from stderr
        result["summary"] = {"stderr": " ".join(err.strip().splitlines()[-3:])[-600:]}
    result |= {"stdout": (out or "")[-4000:], "stderr": (err or "")[-3000:]}
    print(json.dumps({k: result[k] for k in ("argv", "code", "seconds")}), flush=True)
    print("  " + json.dumps(result["summary"])[:3000], flush=True)
    return result


def end_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def ours(marks: tuple[str, ...]) -> set[int]:
    """Processes whose command line names our temp dir or GCS port, and everything below them."""
    links, found = {}, set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = (
                Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
        except OSError:
            continue
        links[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        if any(m in cmdline for m in marks):
            found.add(int(entry))
    while True:
        below = {p for p, parent in links.items() if parent in found} - found
        if not below:
            return found - {os.getpid()}
        found |= below


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--allow-unhardened", action="store_true", help="use workers on sandbox layer 1")
    parser.add_argument("--checks", type=int, default=20)
    parser.add_argument("--budget", type=float, default=300.0, help="seconds for the whole script")
    parser.add_argument(
        "--compare-local", action="store_true", help="also the throughput with --executor local"
    )
    parser.add_argument(
        "--tests", action="store_true", help="also tests/test_ray_executor.py, if time is left"
    )
    parser.add_argument("--skip-tests", action="store_true", help="(default now; kept for old command lines)")
    args = parser.parse_args()
    budget = Budget(args.budget)
    args.out.mkdir(parents=True, exist_ok=True)
    result_file = args.out / "ray-gpu-verify.json"
    tmp = Path(tempfile.mkdtemp(prefix="tl-ray-gpu-", dir="/tmp"))
    token = tmp / "token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env |= {
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(token),
        "RAY_USAGE_STATS_ENABLED": "0",
        "TRITONLAB_HOME": str(tmp / "home"),
    }
    if args.allow_unhardened:
        env["TRITONLAB_RAY_ALLOW_UNHARDENED"] = "1"
    # `ray` beside the interpreter (a venv), else Ray's CLI module (wheels installed with pip --target)
    beside = Path(sys.executable).with_name("ray")
    ray_cli = [str(beside)] if beside.exists() else [sys.executable, "-m", "ray.scripts.scripts"]
    report: dict = {
        "python": sys.version.split()[0],
        "sandbox_env": os.environ.get("TRITONLAB_SANDBOX", ""),
        "budget_s": args.budget,
        "steps": [],
        "skipped": [],
        "finished": False,
    }
    marks = (str(tmp), f"--gcs_server_port={port}", f"127.0.0.2:{port}")

    def save() -> None:
        report["elapsed_s"] = round(time.monotonic() - budget.started, 1)
        result_file.write_text(json.dumps(report, indent=1))

    def step(
        name: str, argv: list[str], wanted_s: float, least_s: float, run_env: dict | None = None
    ) -> dict:
        """Run a step with min(wanted_s, what the budget has left); skip it when less than least_s is left."""
        left = budget.left()
        if left < least_s:
            report["skipped"].append(
                {"step": name, "reason": f"{left:.0f} s left of the budget, needs {least_s:.0f}"}
            )
            print(json.dumps({"skipped": name, "left_s": round(left)}), flush=True)
            save()
            return {"code": "skipped"}
        result = {"step": name} | sh(argv, run_env or env, min(wanted_s, left))
        report["steps"].append(result)
        save()
        return result

    def on_term(signum: int, _frame: object) -> None:
        raise SystemExit(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    save()
    try:
        head = [*ray_cli, "start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.2"]
        head += ["--temp-dir", str(tmp / "ray"), "--include-dashboard=false", "--disable-usage-stats"]
        head += ["--resources", json.dumps({"tritonlab_interpreter": 1})]
        if step("ray head", head, 90, 20)["code"] != 0:
            report["error"] = "the Ray head did not start"
            return 1
        env["RAY_ADDRESS"] = f"127.0.0.2:{port}"
        py = [sys.executable]
        status = (
            "import ray, json; ray.init(logging_level='ERROR'); print(json.dumps(ray.cluster_resources()))"
        )
        step("cluster resources", [*py, "-c", status], 60, 10)
        check = [*py, "-m", "tritonlab", "check", "vector-copy", "--solution", "--json", "--backend", "gpu"]
        tput = [*py, "scripts/ray_throughput.py", "--checks", str(args.checks), "--backend", "gpu"]
        step(
            f"{args.checks} checks at once via ray",
            [*tput, "--executor", "ray", "--out", str(args.out / "throughput-ray.json")],
            240,
            60,
        )
        step("check via ray (cold: starts its worker)", [*check, "--executor", "ray"], 120, 40)
        step("check via local (cold)", [*check, "--executor", "local"], 60, 30)
        for exercise in ("softmax", "matmul"):
            one = [*py, "-m", "tritonlab", "check", exercise, "--solution", "--json", "--backend", "gpu"]
            step(f"{exercise} via ray (cold)", [*one, "--executor", "ray"], 90, 40)
        if args.compare_local:
            local = [*tput, "--executor", "local", "--out", str(args.out / "throughput-local.json")]
            step(f"{args.checks} checks at once, local", local, 240, 60)
    finally:
        for proc in list(RUNNING):  # stopped mid-step (SIGTERM): that step's processes go too
            end_group(proc)
        for pid in ours(marks):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        save()
    if args.tests:
        test_env = {k: v for k, v in env.items() if k not in ("RAY_ADDRESS", "TRITONLAB_HOME")}
        tests = [
            sys.executable,
            "-m",
            "pytest",
            "tests/test_ray_executor.py",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
        ]
        step("ray tests (interpreter)", tests, 240, 120, test_env)
    report["finished"] = True
    # Exit 0 only when every step ran and ended well: a throughput step cut at its limit is not a pass.
    report["failed"] = [s["step"] for s in report["steps"] if s.get("code") != 0]
    report["ok"] = not report["failed"] and not report["skipped"]
    save()
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
