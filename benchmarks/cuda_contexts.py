"""What a CUDA context costs when many processes make and end them at once (issue 37), on a GPU:

    python benchmarks/cuda_contexts.py [--concurrency 1,4,16,32] [--seconds 8] [--idle 0,16] [--out FILE.json]

Every GPU run of a check is a process of its own with a CUDA context of its own (a warm child makes it before
its job: runs/pool.py `init_device`), and it ends with the process. Under the lessons 2-8 load, making the
context took about 3 s of wall time against 0.17 s alone (H100-80GB-HBM3 run 2026-12-07 (4d5eeba)), and a
replay that compiled nothing still took about 3 s of wall time for 1.3 s of CPU. This script asks whether the
driver serialises that work: a parent that imported torch (no CUDA yet, like the zygote) forks children from
`concurrency` threads for `seconds`; each child makes its context (`torch.zeros(1, device="cuda")`, synchronised),
allocates and fills `--alloc-mib` MiB, reports its clock readings through a pipe and leaves with `os._exit`
(as a run does). The parent times each phase: fork to the child's first line (start), the context, the
allocation, and the child's last clock reading to its reaping (exit: the context's teardown happens there).
With `--idle K`, K more children each hold an idle context the whole time (the warm children waiting for a job).

The report gives, per setting, the children a second and each phase's median and 95th percentile. If the
children a second stop growing with the concurrency while the phases grow, the driver serialises them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import warnings


def _child(write_end: int, alloc_mib: int) -> None:  # pragma: no cover - runs in a forked child
    code = 1
    try:
        import torch

        began = time.monotonic()
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        context = time.monotonic()
        x = torch.empty(alloc_mib << 18, dtype=torch.float32, device="cuda")
        x.fill_(1.0)
        torch.cuda.synchronize()
        allocated = time.monotonic()
        os.write(write_end, json.dumps([began, context, allocated, time.monotonic()]).encode())
        code = 0
    finally:
        os._exit(code)


def _hold(stop: threading.Event, ready: threading.Barrier) -> None:
    """An idle context for the whole measurement: a child that made one and waits for its pipe to close."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - a forked child
        os.close(write_end)
        import torch

        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        os.read(read_end, 1)
        os._exit(0)
    os.close(read_end)
    time.sleep(2.0)  # its context made (alone: well under a second)
    ready.wait()
    stop.wait()
    os.close(write_end)
    os.waitpid(pid, 0)


def _worker(deadline: float, alloc_mib: int, rows: list, errors: list) -> None:
    while time.monotonic() < deadline:
        read_end, write_end = os.pipe()
        forked = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - a forked child
            os.close(read_end)
            _child(write_end, alloc_mib)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as f:
            data = f.read()
        _, status = os.waitpid(pid, 0)
        reaped = time.monotonic()
        try:
            began, context, allocated, last = json.loads(data)
        except ValueError:
            errors.append(f"child {pid} exited {status} without a report")
            continue
        rows.append(
            {
                "start": began - forked,
                "context": context - began,
                "alloc": allocated - context,
                "exit": reaped - last,
                "whole": reaped - forked,
                "ended": reaped,
            }
        )


def measure(concurrency: int, seconds: float, idle: int, alloc_mib: int) -> dict:
    stop = threading.Event()
    ready = threading.Barrier(idle + 1)
    holders = [threading.Thread(target=_hold, args=(stop, ready)) for _ in range(idle)]
    for t in holders:
        t.start()
    ready.wait()
    rows: list[dict] = []
    errors: list[str] = []
    began = time.monotonic()
    deadline = began + seconds
    threads = [threading.Thread(target=_worker, args=(deadline, alloc_mib, rows, errors)) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ended = time.monotonic()
    stop.set()
    for t in holders:
        t.join()
    done = [r for r in rows if r["ended"] <= deadline]  # children a second: those that ended inside the window

    def spread(key: str) -> dict:
        values = sorted(r[key] for r in rows)
        if not values:
            return {}
        return {
            "median": round(statistics.median(values), 4),
            "p95": round(values[min(len(values) - 1, int(0.95 * len(values)))], 4),
        }

    return {
        "concurrency": concurrency,
        "idle_contexts": idle,
        "alloc_mib": alloc_mib,
        "children": len(rows),
        "children_per_s": round(len(done) / seconds, 2),
        "wall_s": round(ended - began, 2),
        "errors": errors[:5],
        **{key: spread(key) for key in ("start", "context", "alloc", "exit", "whole")},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="1,4,16,32", help="comma-separated thread counts")
    parser.add_argument("--idle", default="0,16", help="comma-separated counts of idle contexts held")
    parser.add_argument("--seconds", type=float, default=8.0, help="how long each setting forks children")
    parser.add_argument("--alloc-mib", type=int, default=64, help="MiB each child allocates and fills")
    parser.add_argument("--out", help="write the report (JSON) here too")
    args = parser.parse_args(argv)
    try:
        levels = [int(x) for x in args.concurrency.split(",") if x]
        idles = [int(x) for x in args.idle.split(",") if x]
    except ValueError:
        parser.error("--concurrency and --idle take comma-separated whole numbers")
    if not levels or min(levels) < 1 or max(levels) > 128 or min(idles or [0]) < 0 or max(idles or [0]) > 128:
        parser.error("--concurrency from 1 to 128, --idle from 0 to 128")
    if args.seconds <= 0 or not 0 <= args.alloc_mib <= 4096:
        parser.error("--seconds must be positive, --alloc-mib from 0 to 4096")
    import torch

    if not torch.cuda.is_available():
        print("cuda_contexts.py: no CUDA device here; this measures the GPU driver", file=sys.stderr)
        return 1
    if torch.cuda.is_initialized():  # a forked child cannot use CUDA then
        print("cuda_contexts.py: CUDA was started before the forks", file=sys.stderr)
        return 1
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # fork with threads: the children only use CUDA
    report = []
    print("| concurrency | idle contexts | children/s | start | context | alloc | exit | whole (median / p95 s) |")
    print("|---|---|---|---|---|---|---|---|")
    for idle in idles:
        for level in levels:
            row = measure(level, args.seconds, idle, args.alloc_mib)
            report.append(row)
            cells = [f"{row[k].get('median', '-')} / {row[k].get('p95', '-')}" for k in ("start", "context", "alloc", "exit", "whole")]
            print(f"| {level} | {idle} | {row['children_per_s']} | " + " | ".join(cells) + " |", flush=True)
            if row["errors"]:
                print("  errors:", row["errors"], flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"argv": sys.argv[1:], "rows": report}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
