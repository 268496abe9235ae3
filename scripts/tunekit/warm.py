"""Compile in parallel before anything is timed: worker processes run each (variant, case group) once, and each
torch.compile peer once per case, so that Triton's and Inductor's on-disk caches hold the kernels when the main
process reaches them (Triton's key is the source, the constants and the arguments' 16-divisibility, the same
for every case of a group). A compile error found here is handed to the main process, which then does not
try that variant on that group again. Workers still running at the warm-up deadline are killed: what they did
not compile, the main process compiles itself (the clock permitting).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tunekit.plan import Section


def jobs_of(sections: list[Section]) -> list[dict[str, str]]:
    """Every warm-up job, most valuable first: each variant once per group (on the group's first case), each
    compiled peer once per case."""
    out: list[dict[str, str]] = []
    for section in sections:
        first_case: dict[str, str] = {}
        for case in section.cases:
            first_case.setdefault(case.group, case.label)
        for impl in section.impls:
            if impl.kind == "peer" and impl.name.startswith("torch.compile"):
                out += [{"section": section.name, "impl": impl.name, "case": c.label} for c in section.cases]
            elif impl.kind in ("variant", "reference"):
                out += [
                    {"section": section.name, "impl": impl.name, "case": label}
                    for group, label in first_case.items()
                    if impl.applies(group)
                ]
    # max-autotune compiles for minutes: last, so that it never delays the kernels we tune
    return sorted(out, key=lambda j: j["impl"] == "torch.compile max-autotune")


def run_workers(
    script: Path, argv: list[str], procs: int, timeout_s: float, tmp: Path, log: Any
) -> list[dict]:
    """Start ``procs`` workers (this script with ``--warm-worker i/procs``), wait at most ``timeout_s``, return
    what they reported (one dict per finished job)."""
    tmp.mkdir(parents=True, exist_ok=True)
    workers = []
    for i in range(procs):
        out = tmp / f"warm-{i}.jsonl"
        out.unlink(missing_ok=True)
        cmd = [sys.executable, str(script), *argv, "--warm-worker", f"{i}/{procs}", "--warm-file", str(out)]
        err = open(tmp / f"warm-{i}.log", "w")  # noqa: SIM115 - closed below
        workers.append(
            (subprocess.Popen(cmd, stdout=err, stderr=subprocess.STDOUT, start_new_session=True), out, err)
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(p.poll() is None for p, _, _ in workers):
        time.sleep(0.5)
    killed = 0
    for p, _out, err in workers:
        if p.poll() is None:
            killed += 1
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the worker and anything it started (compile subprocesses)
            except ProcessLookupError:
                pass
            p.wait()
        err.close()
    reports = []
    for _p, out, _err in workers:
        if out.exists():
            for line in out.read_text().splitlines():
                try:
                    reports.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a line cut by the kill
    log(
        f"warm-up: {len(reports)} jobs done by {procs} processes, {killed} killed at the {timeout_s:.0f} s limit"
    )
    return reports


def worker(sections: list[Section], shard: str, out_file: Path) -> int:
    """In a worker: run this shard's jobs once each, appending one JSON line per job to ``out_file``."""
    import torch

    index, count = (int(x) for x in shard.split("/"))
    by_name = {s.name: s for s in sections}
    jobs = jobs_of(sections)[index::count]
    with open(out_file, "a") as fh:
        for job in jobs:
            section = by_name[job["section"]]
            impl = next(i for i in section.impls if i.name == job["impl"])
            case = next(c for c in section.cases if c.label == job["case"])
            began = time.monotonic()
            rec: dict[str, Any] = {**job, "group": case.group}
            try:
                args = case.make()
                impl.run(*args, *case.extra)
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                rec["ok"] = True
            except Exception as exc:  # noqa: BLE001 - reported to the main process
                rec["ok"] = False
                rec["error"] = f"{type(exc).__name__}: {exc}"[:400]
            finally:
                release = getattr(impl.run, "release", None)
                if callable(release):
                    release()
            rec["s"] = round(time.monotonic() - began, 2)
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
    return 0
