"""How long a run takes to start, and what its PID namespace costs (issue 34): `python benchmarks/run_start.py`.

Each run is forked from the warm worker; since issue 34 it lives in a PID namespace of its own, which costs two
forks more per run (its waiter outside, its init inside: runs/pidns.py) and, hardened, a root of its own
(runs/rootview.py). For each sandbox layer this machine has (basic; hardened where bubblewrap works) it starts a
worker and times RUNS runs of a tiny program, one after the other: from `Zygote.start` to the program's first
line (the start), and to its end. Then one run that waits while the memory of its processes is read from the
host's /proc (`smaps_rollup`: what each process holds of its own, Private_Clean + Private_Dirty, and its share
of the rest, Pss). To compare with the code before issue 34, run it again with that code first on PYTHONPATH
(`git worktree add /tmp/before <commit>`; `PYTHONPATH=/tmp/before/src python benchmarks/run_start.py`): the
report says which walls the runs had.

On a GPU (`--backend gpu`) the worker keeps warm children (`--pool`, default 2): each made its PID namespace
before it created its CUDA context (basicwalls.ahead, or jail.isolate_run for a hardened one bound to its run
directory), and the program launches a Triton kernel and checks its values, so the report also says whether
CUDA works in a warm child of its own namespace.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = """
import json, os, sys, time
started = time.time()
out = {"started": started, "pid": os.getpid(), "ppid": os.getppid(),
       "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
if sys.argv[1] == "gpu":
    import torch, triton, triton.language as tl

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)

    x = torch.arange(1000, device="cuda", dtype=torch.float32)
    add_one[(8,)](x, 1000, BLOCK=128)
    torch.cuda.synchronize()
    out["cuda"] = bool(torch.equal(x.cpu(), torch.arange(1000, dtype=torch.float32) + 1))
if sys.argv[2] == "wait":
    print(json.dumps(out), flush=True)
    while not os.path.exists("stop"):
        time.sleep(0.05)
print(json.dumps(out), flush=True)
"""


def memory(pid: int) -> dict[str, int]:
    """KiB a process holds of its own (Private_Clean + Private_Dirty) and its proportional share (Pss)."""
    fields: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            name, value = line.split(":", 1)
            fields[name] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        return {}
    own = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return {"own_kib": own, "pss_kib": fields.get("Pss", 0)}


def tree(root: int) -> list[int]:
    """`root` and every process below it, parents first (host /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, queue = [root], [root]
    while queue:
        for child in children.get(queue.pop(0), []):
            found.append(child)
            queue.append(child)
    return found


def one_layer(backend: str, hardened: bool, runs: int, pool: int) -> dict:
    from tritonlab.runs import runfolder, sandbox
    from tritonlab.runs.cgroups import rungroup
    from tritonlab.runs.limits import default_limits

    zygote = sandbox.Zygote(backend, hardened=hardened, pool=pool)
    info = zygote.wait_ready()

    def start(mode: str) -> tuple:
        run_dir, warm = zygote.new_run_dir()
        copy = run_dir / "program.py"
        copy.write_text(PROGRAM)
        (run_dir / "job.json").write_text(
            json.dumps({"mode": "run", "file": str(copy), "argv": [backend, mode]})
        )
        if hardened:
            sandbox.hardening.prepare_run_dir(copy)
        if warm:  # its warm child is ready (a CUDA context takes seconds)
            time.sleep(0.5 if backend != "gpu" else 3.0)
        began = time.time()
        return zygote.start(run_dir, default_limits(backend, 120)), run_dir, began, warm

    starts, totals, walls, cuda = [], [], [], []
    try:
        for _ in range(runs):
            handle, run_dir, began, warm = start("go")
            result = handle.wait()
            ended = time.time()
            runfolder.remove_run_dir(run_dir)
            if result.exit_code != 0:
                output = result.output[-2000:]
                raise SystemExit(f"a run failed ({result.exit_code}, {result.signal}):\n{output}")
            seen = json.loads(result.output.strip().splitlines()[-1])
            starts.append((seen["started"] - began) * 1000)
            totals.append((ended - began) * 1000)
            walls.append(seen["pid"] == 2 and seen["ppid"] == 1 and seen["pids"] == [1, 2])
            cuda.append(seen.get("cuda"))
        handle, run_dir, began, warm = start("wait")
        while not (run_dir / "output.log").read_text().strip():
            time.sleep(0.05)
        host = handle.pid
        if hardened and hasattr(zygote, "pid_level"):
            host = rungroup.host_pid(int(handle.pid), zygote.proc.pid, level=zygote.pid_level())
        elif hardened:  # the code before issue 34: a run's last NSpid field is the worker's namespace's
            host = rungroup.host_pid(int(handle.pid), zygote.proc.pid)
        processes = [{"pid": p, **memory(p)} for p in tree(int(host or 0))]
        (run_dir / "stop").write_text("")
        handle.wait()
        runfolder.remove_run_dir(run_dir)
    finally:
        zygote.close()
    return {
        "layer": "hardened" if hardened else "basic",
        "walls": info.get("walls", "none (code before issue 34)"),
        "runs": runs,
        "warm": warm,
        "start_ms_median": round(statistics.median(starts), 1),
        "start_ms_min_max": [round(min(starts), 1), round(max(starts), 1)],
        "run_ms_median": round(statistics.median(totals), 1),
        "own_pid_namespace": all(walls),
        "cuda_ok": all(cuda) if backend == "gpu" else None,
        "processes_of_a_run": processes,  # waiter, init, run (parents first); one process before issue 34
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="interpreter", choices=("interpreter", "gpu"))
    parser.add_argument("--runs", type=int, default=20, help="runs timed per layer (default 20)")
    parser.add_argument("--pool", type=int, default=None, help="warm children (default: 0, or 2 on a GPU)")
    parser.add_argument("--layers", default="basic,hardened", help="basic, hardened or both (default)")
    parser.add_argument("--out", type=Path, default=None, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    sys.path.append(str(Path(__file__).resolve().parents[1] / "src"))  # PYTHONPATH wins: see the text above
    os.environ.setdefault("TRITONLAB_HOME", tempfile.mkdtemp(prefix="run-start-home-"))
    from tritonlab.runs import hardening

    pool = args.pool if args.pool is not None else (2 if args.backend == "gpu" else 0)
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "backend": args.backend,
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
        "pool": pool,
        "tritonlab": __import__("tritonlab").__file__,
        "layers": [],
    }
    for layer in args.layers.split(","):
        if layer == "hardened" and not hardening.probe(args.backend)["hardened"]:
            report["layers"].append({"layer": "hardened", "skipped": hardening.probe(args.backend)["reason"]})
            continue
        report["layers"].append(one_layer(args.backend, layer == "hardened", args.runs, pool))
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"run-start-{args.backend}.json").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
