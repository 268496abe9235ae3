"""How well the hardened zygote's warm children fit a class's checks: forked, used, made ready ahead, wasted.

    python benchmarks/warm_plan.py [--learners 60] [--checks 200] [--pool 17] [--speed 0.5] [--queue 8] [--seed 1]

Hardened with a pool (runs/pool.py `BoundPool`), each warm child is isolated into the run directory of a coming
run and bound to one compile cache (caches.warm_plan), then creates its CUDA context on a GPU: a few tenths of
a core-second each there, before any run. A child bound to a cache whose run never comes is dropped unused;
its start was CPU spent for nothing. This script drives a real hardened zygote (the interpreter backend: the
CUDA context is the one thing missing) with a class's pattern of requests, each check asking for a run
directory with the learner's cache (the check child), then with the replay's (the replay), and, for a share
`--speed` of checks, the learner's again (the speed line's recording run) and the replay's (its timing run),
learners in random order; the runs themselves are not started (each directory is given up as a finished run
is). With `--queue Q`, Q checks wait in the run queue at any time, each announced to the zygote when it joins
the queue (`Zygote.expect`, as service/check.py does) and run when it reaches the head. It prints, per check: warm children forked, taken by a run, taken ready ahead (made before the request
that took it, so its start was off the run's path), and dropped unused.

CPU figures for a warm child's start on a GPU are not measured here (no GPU): docs/scale.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(learners: int, checks: int, pool: int, speed: float, seed: int, queue: int = 0) -> dict:
    os.environ["TRITONLAB_HOME"] = tempfile.mkdtemp(prefix="warm-plan-")
    sys.path.insert(0, str(ROOT / "src"))
    from tritonlab.runs import caches, hardening, runfolder, sandbox

    if not hardening.probe("interpreter")["hardened"]:
        raise SystemExit(f"needs the hardened layer: {hardening.probe('interpreter')['reason']}")
    zygote = sandbox.Zygote("interpreter", hardened=True, pool=pool)
    zygote.wait_ready()
    made: dict[str, int] = {}  # run directory -> the request number during which its child was forked
    dropped: list[str] = []
    request = [0]
    send = zygote.send

    def counted(msg: dict) -> None:
        if msg.get("op") == "warm":
            made[msg["run_dir"]] = request[0]
        elif msg.get("op") == "drop":
            dropped.append(msg["run_dir"])
        send(msg)

    zygote.send = counted  # type: ignore[method-assign]
    rng = random.Random(seed)
    taken: list[tuple[str, bool]] = []  # (run directory, ready ahead)
    began = time.monotonic()
    try:
        time.sleep(1.0)  # the pool's first children
        waiting: list[str] = []
        for _ in range(checks):
            while len(waiting) <= queue:  # checks join the queue (each learner has one at a time) ...
                name = caches.learner_name(f"l{rng.randrange(learners)}")
                if name not in waiting:
                    waiting.append(name)
                    if queue:
                        zygote.expect(name)
            learner = waiting.pop(0)  # ... and the head gets its slot
            runs = [learner, caches.REPLAY]
            if rng.random() < speed:
                runs += [learner, caches.REPLAY]
            for cache in runs:
                request[0] += 1
                path, warm = zygote.new_run_dir(cache)
                if warm:
                    taken.append((str(path), made.get(str(path), request[0]) < request[0]))
                runfolder.remove_run_dir(path)  # the run is over: its directory goes
        forked_during = sum(1 for r in made.values() if r > 0)
        counted = dict(zygote.warm_counts)  # the zygote's own counts (what /api/status shows), from the start
    finally:
        zygote.close()
    used = {p for p, _ in taken}
    wasted = [d for d in dropped if d not in used]
    return {
        "learners": learners,
        "checks": checks,
        "pool": pool,
        "speed_share": speed,
        "queue": queue,
        "runs": request[0],
        "forked_per_check": round(forked_during / checks, 2),
        "taken_per_check": round(len(taken) / checks, 2),
        "ready_ahead_per_check": round(sum(1 for _, ahead in taken if ahead) / checks, 2),
        "dropped_unused_per_check": round(len(wasted) / checks, 2),
        "seconds": round(time.monotonic() - began, 1),
        "zygote_counts": counted,
        "dropped_unused": len(wasted),
        "taken": len(taken),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=60)
    parser.add_argument("--checks", type=int, default=200)
    parser.add_argument(
        "--pool", type=int, default=17, help="warm children (a GPU's default: runs at once + 1)"
    )
    parser.add_argument("--speed", type=float, default=0.5, help="share of checks the speed line times")
    parser.add_argument("--queue", type=int, default=0, help="checks waiting in the run queue, announced")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    result = measure(args.learners, args.checks, args.pool, args.speed, args.seed, args.queue)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
