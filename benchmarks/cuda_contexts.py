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
`--raw` makes the children call the CUDA driver through ctypes instead of torch (cuInit, the primary context,
cuMemAlloc and cuMemsetD32): what the driver costs without torch's own start. `--env NAME=VALUE` sets a variable
in every child before its context (e.g. CUDA_DEVICE_MAX_CONNECTIONS=1). With `--attackers A`, A more children
make and destroy contexts in a loop through the driver (cuCtxCreate, cuCtxDestroy) for the whole setting, with
the driver's default work queues (what a learner's run could do through ctypes): how much one run that does
nothing else slows its neighbours' starts.

The report gives, per setting, the children a second and each phase's median and 95th percentile. If the
children a second stop growing with the concurrency while the phases grow, the driver serialises them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time
import warnings

DEVICE = "cuda"  # --dry-run: "cpu", to try the plumbing on a machine without a GPU
RAW = False  # --raw: the children use the CUDA driver API through ctypes, without torch
CHILD_ENV: dict[str, str] = {}  # --env: set in each child before its context


class _Driver:
    """The few CUDA driver calls a --raw child makes (libcuda through ctypes)."""

    def __init__(self) -> None:
        import ctypes

        self.ctypes = ctypes
        self.lib = ctypes.CDLL("libcuda.so.1")

    def call(self, name: str, *args: object) -> None:
        code = getattr(self.lib, name)(*args)
        if code != 0:
            raise RuntimeError(f"{name} returned CUDA error {code}")

    def context(self) -> None:
        c = self.ctypes
        device, ctx = c.c_int(), c.c_void_p()
        self.call("cuInit", 0)
        self.call("cuDeviceGet", c.byref(device), 0)
        self.call("cuDevicePrimaryCtxRetain", c.byref(ctx), device)
        self.call("cuCtxSetCurrent", ctx)
        self.call("cuCtxSynchronize")

    def churn(self, write_end: int) -> None:
        """Make and destroy contexts until killed, one byte to `write_end` for each."""
        c = self.ctypes
        device, ctx = c.c_int(), c.c_void_p()
        self.call("cuInit", 0)
        self.call("cuDeviceGet", c.byref(device), 0)
        while True:
            self.call("cuCtxCreate_v2", c.byref(ctx), 0, device)
            self.call("cuCtxDestroy_v2", ctx)
            os.write(write_end, b".")

    def fill(self, mib: int) -> None:
        c = self.ctypes
        if mib <= 0:
            return
        ptr = c.c_uint64()
        self.call("cuMemAlloc_v2", c.byref(ptr), c.c_size_t(mib << 20))
        self.call("cuMemsetD32_v2", ptr, c.c_uint(1), c.c_size_t(mib << 18))
        self.call("cuCtxSynchronize")


def _sync() -> None:
    import torch

    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _make_context() -> _Driver | None:
    """In a forked child: this process's CUDA context, made as the settings say (`--env` first); the driver
    wrapper with `--raw`, else None (torch's context)."""
    os.environ.update(CHILD_ENV)
    if RAW:
        driver = _Driver()
        driver.context()
        return driver
    import torch

    torch.zeros(1, device=DEVICE)
    _sync()
    return None


def _only(keep: int) -> None:
    """In a forked child: close every descriptor but stdio and `keep` (another thread's pipe would otherwise
    stay open here, and its reader would wait for this child's end)."""
    os.closerange(3, keep)
    os.closerange(keep + 1, 65536)


def _child(write_end: int, alloc_mib: int) -> None:  # pragma: no cover - runs in a forked child
    code = 1
    try:
        _only(write_end)
        began = time.monotonic()
        driver = _make_context()
        context = time.monotonic()
        if driver is not None:
            driver.fill(alloc_mib)
        else:
            import torch

            x = torch.empty(alloc_mib << 18, dtype=torch.float32, device=DEVICE)
            x.fill_(1.0)
            _sync()
        allocated = time.monotonic()
        os.write(write_end, json.dumps([began, context, allocated, time.monotonic()]).encode())
        code = 0
    except BaseException as e:  # noqa: BLE001 - said through the pipe, the parent counts it as an error
        os.write(write_end, json.dumps({"error": f"{type(e).__name__}: {e}"[:300]}).encode())
    finally:
        os._exit(code)


def _hold(stop: threading.Event, ready: threading.Barrier) -> None:
    """An idle context for the whole measurement: a child that made one and sleeps until it is killed."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - a forked child
        try:
            _only(2)
            _make_context()
            time.sleep(3600)
        finally:
            os._exit(0)
    time.sleep(2.0)  # its context made (alone: well under a second)
    ready.wait()
    stop.wait()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _churn(stop: threading.Event, ready: threading.Barrier, loops: list) -> None:
    """An attacker for the whole measurement: a child that makes and destroys contexts in a loop (the driver's
    API; a CPU stand-in with --dry-run), counted through its pipe."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - a forked child
        try:
            os.close(read_end)
            _only(write_end)
            if DEVICE == "cuda":
                _Driver().churn(write_end)
            while True:  # --dry-run: no driver, a loop that only counts
                time.sleep(0.01)
                os.write(write_end, b".")
        finally:
            os._exit(1)
    os.close(write_end)
    os.set_blocking(read_end, False)
    ready.wait()
    count = 0

    def drain() -> int:
        got = 0
        try:
            while chunk := os.read(read_end, 65536):
                got += len(chunk)
        except BlockingIOError:
            pass
        return got

    drain()  # what it made before the measurement began is not counted
    while not stop.wait(0.05):
        count += drain()
    count += drain()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(read_end)
    loops.append(count)


def _worker(deadline: float, alloc_mib: int, rows: list, errors: list, at_least_one: bool = False) -> None:
    while at_least_one or time.monotonic() < deadline:
        at_least_one = False
        read_end, write_end = os.pipe()
        forked = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - a forked child
            os.close(read_end)
            _child(write_end, alloc_mib)
        os.close(write_end)
        data = os.read(read_end, 4096)  # the child's one write (under PIPE_BUF: whole), or b"" at its end
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
        reaped = time.monotonic()
        try:
            began, context, allocated, last = json.loads(data)
        except (ValueError, TypeError):
            errors.append(
                f"child {pid} exited {status}: {data[:300].decode(errors='replace') or 'no report'}"
            )
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


def measure(
    concurrency: int,
    seconds: float,
    idle: int,
    alloc_mib: int,
    at_least_one: bool = False,
    attackers: int = 0,
) -> dict:
    stop = threading.Event()
    ready = threading.Barrier(idle + attackers + 1)
    loops: list[int] = []
    holders = [threading.Thread(target=_hold, args=(stop, ready)) for _ in range(idle)]
    holders += [threading.Thread(target=_churn, args=(stop, ready, loops)) for _ in range(attackers)]
    for t in holders:
        t.start()
    ready.wait()
    rows: list[dict] = []
    errors: list[str] = []
    began = time.monotonic()
    deadline = began + seconds
    threads = [
        threading.Thread(target=_worker, args=(deadline, alloc_mib, rows, errors, at_least_one))
        for _ in range(concurrency)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ended = time.monotonic()
    stop.set()
    for t in holders:
        t.join()
    # children a second: those that ended inside the window
    done = [r for r in rows if r["ended"] <= deadline]

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
        "attackers": attackers,
        "attacker_contexts_per_s": round(sum(loops) / (ended - began), 2) if attackers else None,
        "alloc_mib": alloc_mib,
        "children": len(rows),
        "children_per_s": round(len(done) / seconds, 2) if seconds > 0 else None,
        "wall_s": round(ended - began, 2),
        "errors": errors[:5],
        **{key: spread(key) for key in ("start", "context", "alloc", "exit", "whole")},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="1,4,16,32", help="comma-separated thread counts")
    parser.add_argument("--idle", default="0,16", help="comma-separated counts of idle contexts held")
    parser.add_argument(
        "--attackers", default="0", help="comma-separated counts of children making contexts in a loop"
    )
    parser.add_argument("--seconds", type=float, default=8.0, help="how long each setting forks children")
    parser.add_argument("--alloc-mib", type=int, default=64, help="MiB each child allocates and fills")
    parser.add_argument("--out", help="write the report (JSON) here too")
    parser.add_argument(
        "--dry-run", action="store_true", help="children use the CPU: try the plumbing anywhere"
    )
    parser.add_argument(
        "--raw", action="store_true", help="children call the CUDA driver (ctypes), not torch"
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="set in every child (repeatable)"
    )
    args = parser.parse_args(argv)
    try:
        levels = [int(x) for x in args.concurrency.split(",") if x]
        idles = [int(x) for x in args.idle.split(",") if x]
        attacks = [int(x) for x in args.attackers.split(",") if x] or [0]
    except ValueError:
        parser.error("--concurrency, --idle and --attackers take comma-separated whole numbers")
    if min(attacks) < 0 or max(attacks) > 16:
        parser.error("--attackers from 0 to 16")
    if not levels or min(levels) < 1 or max(levels) > 128 or min(idles or [0]) < 0 or max(idles or [0]) > 128:
        parser.error("--concurrency from 1 to 128, --idle from 0 to 128")
    if args.seconds <= 0 or not 0 <= args.alloc_mib <= 4096:
        parser.error("--seconds must be positive, --alloc-mib from 0 to 4096")
    global DEVICE, RAW
    DEVICE = "cpu" if args.dry_run else "cuda"
    RAW = args.raw and not args.dry_run
    for item in args.env:
        name, eq, value = item.partition("=")
        if not eq or not name:
            parser.error(f"--env {item!r}: expected NAME=VALUE")
        CHILD_ENV[name] = value
    import torch  # noqa: F401 - imported once here, as the zygote has it; CUDA is started only in the children

    # not torch.cuda.is_available(): it starts the driver here, and a forked child cannot use CUDA then
    probe = measure(1, 0.0, 0, 0, at_least_one=True)
    if probe["errors"]:
        print(f"cuda_contexts.py: a child cannot use {DEVICE}: {probe['errors'][0]}", file=sys.stderr)
        return 1
    # fork with threads: the children only use torch
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    report = []
    print(
        "| concurrency | idle contexts | attackers (their contexts/s) | children/s | start | context | alloc "
        "| exit | whole (median / p95 s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for attackers in attacks:
        for idle in idles:
            for level in levels:
                row = measure(level, args.seconds, idle, args.alloc_mib, attackers=attackers)
                report.append(row)
                cells = [
                    f"{row[k].get('median', '-')} / {row[k].get('p95', '-')}"
                    for k in ("start", "context", "alloc", "exit", "whole")
                ]
                attack = f"{attackers} ({row['attacker_contexts_per_s']})" if attackers else "0"
                print(
                    f"| {level} | {idle} | {attack} | {row['children_per_s']} | " + " | ".join(cells) + " |",
                    flush=True,
                )
            if row["errors"]:
                print("  errors:", row["errors"], flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"argv": sys.argv[1:], "raw": RAW, "env": CHILD_ENV, "rows": report}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
