"""Checks per minute through an executor: N checks submitted at once, as N learners pressing Check together.

    python scripts/ray_throughput.py --executor ray --checks 20 [--backend gpu] [--out FILE]
    python scripts/ray_throughput.py --executor ray --local-cluster 2     # starts and stops its own cluster

With `--executor ray` it joins the cluster at RAY_ADDRESS (docs/scale.md), or, with `--local-cluster K`,
starts a K-node loopback cluster itself (token auth, one `tritonlab_interpreter` unit per node, the way
tests/test_ray_executor.py does) and ends exactly the processes it started. It starts the worker actors,
runs `--warmup` checks (not counted: each worker's first run fills its caches), then submits `--checks`
checks of an exercise's reference solution all at once, one thread each, through one Service: the fair
queue serializes them per worker. It prints (and writes to `--out`) one JSON object: every verdict (passed,
node, executor, latency, queue wait, the verdict's per-phase timings), p50/p95/max latency and queue wait,
checks per minute, and `payload_mb_max`: the most a check shipped to a worker and back (exit 1 above
`--max-payload-mb`, default 1). `--executor local` measures this machine's zygote the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100) of `values`, or None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))  # ceil(n * p / 100), at least 1
    return round(ordered[int(rank) - 1], 3)


def spread(values: list[float]) -> dict:
    return {
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "max": round(max(values), 3) if values else None,
    }


def phase_medians(timings: list[dict]) -> dict:
    """Median of each numeric phase over the verdicts that report it (nested dicts flattened with '.')."""
    flat: dict[str, list[float]] = {}

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}{key}." if isinstance(inner, dict) else f"{prefix}{key}", inner)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            flat.setdefault(prefix, []).append(float(value))

    for t in timings:
        walk("", t)
    return {k: round(statistics.median(v), 3) for k, v in sorted(flat.items())}


# ---- a loopback cluster of our own (--local-cluster) ---------------------------------------------------------


def _pids_named(marks: tuple[str, ...]) -> set[int]:
    """Processes whose command line names one of `marks`, and everything below them."""
    links, found = {}, set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        links[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        if any(m in cmd for m in marks):
            found.add(int(entry))
    while True:
        below = {p for p, parent in links.items() if parent in found} - found
        if not below:
            return found - {os.getpid()}
        found |= below


class LocalCluster:
    """`ray start` a head on 127.0.0.2 and K-1 nodes on 127.0.0.3.., token auth, `units` of the
    `tritonlab_interpreter` resource on each (a node's GPUs Ray finds itself); `stop()` ends exactly those."""

    def __init__(self, nodes: int, units: int = 1) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="tl-ray-tput-", dir="/tmp"))
        token = self.tmp / "token"
        token.write_text(secrets.token_hex(32))
        token.chmod(0o600)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = dict(os.environ)
        env.pop("RAY_ADDRESS", None)
        env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token), "RAY_USAGE_STATS_ENABLED": "0"}
        beside = Path(sys.executable).with_name("ray")
        cli = [str(beside)] if beside.exists() else [sys.executable, "-m", "ray.scripts.scripts"]
        unit = ["--resources", json.dumps({"tritonlab_interpreter": units}), "--num-cpus", str(units)]
        self.marks = (str(self.tmp), f"--gcs_server_port={self.port}", f"127.0.0.2:{self.port}")
        started = time.monotonic()
        head = [*cli, "start", "--head", "--port", str(self.port), "--node-ip-address", "127.0.0.2"]
        head += ["--temp-dir", str(self.tmp / "ray"), "--include-dashboard=false", "--disable-usage-stats"]
        try:
            for k in range(nodes):
                argv = head if k == 0 else [*cli, "start", "--address", f"127.0.0.2:{self.port}"]
                if k:
                    argv += ["--node-ip-address", f"127.0.0.{k + 2}", "--disable-usage-stats"]
                done = subprocess.run([*argv, *unit], env=env, capture_output=True, text=True, timeout=180)
                if done.returncode != 0:
                    raise RuntimeError(f"`ray start` failed: {done.stderr[-1500:]}")
        except BaseException:
            self.stop()
            raise
        self.start_s = round(time.monotonic() - started, 1)
        # this process is a driver of it: the same token and address
        os.environ |= {k: env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_USAGE_STATS_ENABLED")}
        os.environ["RAY_ADDRESS"] = f"127.0.0.2:{self.port}"

    def stop(self) -> None:
        for pid in _pids_named(self.marks):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)  # the token, the nodes' session folders and logs


# ---- the measurement --------------------------------------------------------------------------------------


def measure(args: argparse.Namespace) -> dict:
    from tritonlab.service import Service

    started = time.monotonic()
    service = Service(backend=args.backend, executor=args.executor, remote_workers=args.workers)
    try:
        service.warm_up()
        if args.executor == "local":
            service.zygote().wait_ready()
        ready_s = time.monotonic() - started
        exercise = service.exercise(args.exercise)
        workers = service.remote().capacity if args.executor == "ray" else service.gate().size
        warmup = [service.check(exercise, file=exercise.solution, record=False) for _ in range(args.warmup)]
        records: list[dict] = [{} for _ in range(args.checks)]
        go = threading.Event()
        saving = threading.Lock()

        def save_partial() -> None:  # a run cut short still leaves the verdicts it got
            if args.out:
                with saving:
                    args.out.write_text(json.dumps({"partial": True, "verdicts": records}, indent=1))

        def one(i: int) -> None:
            go.wait()
            submitted = time.monotonic()
            began: list[float] = []
            record = records[i]
            try:
                verdict = service.check(
                    exercise,
                    file=exercise.solution,
                    record=False,
                    timeout=args.timeout,
                    on_start=lambda _run: began.append(time.monotonic()) if not began else None,
                )
            except Exception as exc:  # noqa: BLE001 - a check that raised is a result too
                record |= {"passed": False, "error": f"{type(exc).__name__}: {exc}"}
                return
            finally:
                record["latency_s"] = round(time.monotonic() - submitted, 3)
                if began:
                    record["queue_wait_s"] = round(began[0] - submitted, 3)
            data = verdict.to_json()
            record |= {
                "passed": data["passed"],
                "node": data.get("node", ""),
                "executor": data.get("executor", ""),
                "seed": data["seed"],
                "duration_s": data["duration_s"],
                "timings": data.get("timings", {}),
            }
            if not data["passed"]:
                record["failures"] = [f["message"][:300] for f in data["failures"]][:3]
            save_partial()

        threads = [threading.Thread(target=one, args=(i,), name=f"check-{i}") for i in range(args.checks)]
        for t in threads:
            t.start()
        t0 = time.monotonic()
        go.set()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
    finally:
        service.close()
    latencies = [r["latency_s"] for r in records if "latency_s" in r]
    waits = [r["queue_wait_s"] for r in records if "queue_wait_s" in r]
    nodes: dict[str, int] = {}
    for r in records:
        nodes[r.get("node", "?")] = nodes.get(r.get("node", "?"), 0) + 1
    return {
        "executor": args.executor,
        "backend": service.backend,
        "exercise": args.exercise,
        "sandbox": {"hardened": service.hardened, "reason": service.hardened_reason},
        "workers": workers,
        "checks": args.checks,
        "submitted_at_once": True,
        "all_passed": all(r.get("passed") for r in records),
        "passed": sum(1 for r in records if r.get("passed")),
        "wall_s": round(wall, 2),
        "checks_per_minute": round(60 * args.checks / wall, 1),
        "latency_s": spread(latencies),
        "queue_wait_s": spread(waits),
        "phase_medians_s": phase_medians([r.get("timings", {}) for r in records]),
        "warm_children": {
            run: sum(1 for r in records if r.get("timings", {}).get(f"{run}_warm_child"))
            for run in ("check", "replay")
        },
        # what crossed the wire per check (a remote check: its spec out, its verdict data back), the largest
        "payload_mb_max": {
            way: max((r.get("timings", {}).get("remote", {}).get(key, 0.0) for r in records), default=0.0)
            for way, key in (("to_worker", "payload_mb"), ("back", "reply_mb"))
        },
        "workers_ready_s": round(ready_s, 1),
        "warmup_s": [round(v.duration_s, 2) for v in warmup],
        "checks_per_node": nodes,
        "verdicts": records,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", default="ray", choices=("local", "ray"))
    parser.add_argument("--workers", type=int, default=None, help="ray: at most this many worker actors")
    parser.add_argument("--checks", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=1, help="checks before the measured ones (not counted)")
    parser.add_argument("--exercise", default="vector-copy")
    parser.add_argument("--backend", default=None, help="interpreter or gpu (default: auto)")
    parser.add_argument("--timeout", type=float, default=120.0, help="each check's wall-clock limit (s)")
    parser.add_argument("--local-cluster", type=int, default=0, metavar="K", help="start a K-node cluster")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    parser.add_argument(
        "--max-payload-mb",
        type=float,
        default=1.0,
        help="exit 1 when a check shipped more than this to a worker or back (issue 37's bound)",
    )
    args = parser.parse_args()
    cluster = LocalCluster(args.local_cluster) if args.local_cluster and args.executor == "ray" else None
    try:
        report = measure(args)
    finally:
        if cluster is not None:
            cluster.stop()
    if cluster is not None:
        report["local_cluster"] = {"nodes": args.local_cluster, "start_s": cluster.start_s}
    summary = {k: v for k, v in report.items() if k != "verdicts"}
    print(json.dumps(summary), flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    over = {way: mb for way, mb in report["payload_mb_max"].items() if mb > args.max_payload_mb}
    if over:
        print(f"payload over {args.max_payload_mb} MB per check: {over}", file=sys.stderr)
    return 0 if report["all_passed"] and not over else 1


if __name__ == "__main__":
    sys.exit(main())
