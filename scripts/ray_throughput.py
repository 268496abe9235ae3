"""Checks per minute through an executor: `python scripts/ray_throughput.py --executor ray --workers 2`.

With `--executor ray` it joins the cluster at RAY_ADDRESS (docs/scale.md) and starts `--workers` worker
actors (default: one per resource unit); it then runs `--checks` checks of an exercise's reference solution,
as many at once as there are workers, and prints one JSON line: checks per minute, latency percentiles,
worker start time. `--executor local` measures this machine's zygote the same way, for comparison.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", default="ray", choices=("local", "ray"))
    parser.add_argument("--workers", type=int, default=None, help="ray: at most this many worker actors")
    parser.add_argument("--checks", type=int, default=12)
    parser.add_argument("--exercise", default="vector-copy")
    parser.add_argument("--backend", default=None, help="interpreter or gpu (default: auto)")
    args = parser.parse_args()

    from tritonlab.service import INTERPRETER_POOL, Service

    started = time.monotonic()
    service = Service(backend=args.backend, executor=args.executor, remote_workers=args.workers)
    service.warm_up()
    if args.executor == "local":
        service.zygote().wait_ready()
    ready_s = time.monotonic() - started
    exercise = service.exercise(args.exercise)
    if args.executor == "ray":
        parallel = service.remote().capacity
    else:
        parallel = 1 if service.backend == "gpu" else INTERPRETER_POOL
    # One check first, not counted: the first run on each worker fills its caches.
    service.check(exercise, file=exercise.solution, record=False)
    latencies: list[float] = []
    nodes: dict[str, int] = {}

    def one(_: int) -> bool:
        t = time.monotonic()
        verdict = service.check(exercise, file=exercise.solution, record=False)
        latencies.append(time.monotonic() - t)
        nodes[verdict.node] = nodes.get(verdict.node, 0) + 1
        return verdict.passed

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        passed = list(pool.map(one, range(args.checks)))
    wall = time.monotonic() - t0
    service.close()
    latencies.sort()
    print(
        json.dumps(
            {
                "executor": args.executor,
                "backend": service.backend,
                "workers": parallel,
                "checks": args.checks,
                "all_passed": all(passed),
                "wall_s": round(wall, 2),
                "checks_per_minute": round(60 * args.checks / wall, 1),
                "latency_median_s": round(statistics.median(latencies), 2),
                "latency_max_s": round(latencies[-1], 2),
                "workers_ready_s": round(ready_s, 1),
                "checks_per_node": nodes,
            }
        )
    )
    return 0 if all(passed) else 1


if __name__ == "__main__":
    sys.exit(main())
