"""`--executor ray` on a GPU machine, in one call: a one-node Ray cluster (token auth) on this machine's GPU(s),
`tritonlab check --executor ray --backend gpu`, checks per minute through Ray and locally, then the Ray tests.

    python scripts/ray_gpu_verify.py --out DIR [--allow-unhardened]

Needs `ray` importable (pip install 'tritonlab[ray]', or a venv with --system-site-packages and the carried
wheels, see docs/scale.md). Writes ray-gpu-verify.json into --out. Ends exactly the Ray processes it started.
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


def sh(argv: list[str], env: dict, timeout: float) -> dict:
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = "timeout", str(exc.stdout or ""), str(exc.stderr or "")
    result = {"argv": " ".join(argv), "code": code, "seconds": round(time.perf_counter() - start, 2)}
    result |= {"stdout": out[-4000:], "stderr": err[-3000:]}
    print(json.dumps({k: result[k] for k in ("argv", "code", "seconds")}), flush=True)
    return result


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
    parser.add_argument("--skip-tests", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
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
    ray_cli = str(Path(sys.executable).with_name("ray"))
    report: dict = {"python": sys.version.split()[0], "steps": []}
    marks = (str(tmp), f"--gcs_server_port={port}", f"127.0.0.2:{port}")
    try:
        head = [ray_cli, "start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.2"]
        head += ["--temp-dir", str(tmp / "ray"), "--include-dashboard=false", "--disable-usage-stats"]
        head += ["--resources", json.dumps({"tritonlab_interpreter": 1})]
        report["steps"].append(sh(head, env, 180))
        env["RAY_ADDRESS"] = f"127.0.0.2:{port}"
        py = [sys.executable]
        status = (
            "import ray, json; ray.init(logging_level='ERROR'); print(json.dumps(ray.cluster_resources()))"
        )
        report["steps"].append(sh([*py, "-c", status], env, 120))
        check = [*py, "-m", "tritonlab", "check", "vector-copy", "--solution", "--json", "--backend", "gpu"]
        report["steps"].append(sh([*check, "--executor", "ray"], env, 300))
        report["steps"].append(sh([*check, "--executor", "local"], env, 300))
        tput = [*py, "scripts/ray_throughput.py", "--checks", str(args.checks), "--backend", "gpu"]
        report["steps"].append(sh([*tput, "--executor", "ray"], env, 400))
        report["steps"].append(sh([*tput, "--executor", "local"], env, 400))
        for exercise in ("softmax", "matmul"):
            one = [*py, "-m", "tritonlab", "check", exercise, "--solution", "--json", "--backend", "gpu"]
            report["steps"].append(sh([*one, "--executor", "ray"], env, 300))
    finally:
        for pid in ours(marks):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if not args.skip_tests:
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
        report["steps"].append(sh(tests, test_env, 400))
    (args.out / "ray-gpu-verify.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
