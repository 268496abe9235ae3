"""`make gpu-verify`'s class loads (steps `load` and `load_course`): issue 37's capacity goals, measured by
scripts/load_gpu.py on the GPU the run has, and judged.

Each step runs one bounded load through the web API of a real `serve --classroom` (60 learners, 16 runs at
once, the hardened sandbox when bubblewrap is on PATH): `load` the lessons 2–8 mix with every check's text its
own (`--distinct`, as learners' own files are), `load_course` the whole-course mix. The load's whole report goes
into the run's folder (`load-l2-8.json`, `load-course.json`); the step keeps the figures the goals name. The
goals are the H200's (issue 37); on another GPU the figures are reported against them all the same and the
verdict says which GPU measured them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "load_gpu.py"
LEARNERS, SLOTS = 60, 16
TEARDOWN_S = 40.0  # load_gpu.py's start-up before its bound counts and its own teardown after it
STOP_S = 25.0  # for load_gpu.py to stop what it started, when it is stopped (its own teardown: 20 s)
# mix -> (load_gpu.py's arguments, file name); a load is cut at the step's limit less TEARDOWN_S, at most 150 s
MIXES = {
    "l2-8": (["--mix", "l2-8", "--checks", "240", "--rate", "240", "--distinct"], "load-l2-8.json"),
    "course": (["--mix", "course", "--checks", "120", "--rate", "90"], "load-course.json"),
}
MAX_LOAD_S = 150.0
# issue 37's goals on one H200: (what, summary key path, bound, "≥" or "≤")
GOALS = {
    "l2-8": [
        ("lessons 2–8 mix, every text its own: checks a minute", ("checks_per_minute",), 200.0, "≥"),
        ("lessons 2–8 mix: latency p95, submission to verdict, s", ("latency_s", "p95"), 5.0, "≤"),
    ],
    "course": [("whole-course mix: checks a minute", ("checks_per_minute",), 60.0, "≥")],
}


def argv_for(
    mix: str, seconds: float, out: Path, sandbox: str | None, backend: str = "gpu", more: tuple[str, ...] = ()
) -> list[str]:
    """load_gpu.py's command line for one of the two loads, bounded to `seconds` (`more`: arguments after the
    mix's, which override them: a smaller load for a test)."""
    extra, _ = MIXES[mix]
    argv = [sys.executable, str(SCRIPT), "--backend", backend, "--executor", "local"]
    argv += ["--learners", str(LEARNERS), "--slots", str(SLOTS), *extra]
    argv += ["--max-seconds", f"{seconds:.0f}", "--out", str(out)]
    if sandbox:
        argv += ["--env", f"TRITONLAB_SANDBOX={sandbox}"]
    return argv + list(more)


def run_load(
    env: dict, limit: float, out_dir: Path, mix: str, backend: str = "gpu", more: tuple[str, ...] = ()
) -> dict:
    """Run one load within `limit` seconds; the figures the goals name, the verdicts' agreement, the CPU."""
    seconds = min(MAX_LOAD_S, limit - TEARDOWN_S)
    if seconds < 30:
        return {"error": f"{limit:.0f} s is too short for a load (it needs {30 + TEARDOWN_S:.0f})"}
    sandbox = "hardened" if shutil.which("bwrap") else None
    out = out_dir / MIXES[mix][1]
    argv = argv_for(mix, seconds, out, sandbox, backend, more)
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    code: int | str
    try:
        _, stderr = proc.communicate(timeout=max(1.0, limit - STOP_S))
        code = proc.returncode
    except subprocess.TimeoutExpired:
        # past its own bound: SIGTERM first, so that it stops the server and the runs it started
        proc.terminate()
        try:
            _, stderr = proc.communicate(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, stderr = proc.communicate()
        code = "stopped at the step's limit"
    result: dict = {
        "argv": argv[1:],
        "code": code,
        "seconds": round(time.monotonic() - t0, 1),
        "sandbox": sandbox or "the default (no bubblewrap on PATH)",
    }
    try:
        report = json.loads(out.read_text())
    except (OSError, ValueError) as exc:
        return result | {"error": f"no report: {exc}", "stderr": stderr[-1500:]}
    return result | {"file": out.name} | figures(report)


def figures(report: dict) -> dict:
    """What the step keeps of load_gpu.py's report: the figures the goals name and what tells them apart."""
    s, u = report.get("summary") or {}, report.get("utilisation") or {}
    keys = (
        "verdicts",
        "mismatches",
        "unfinished",
        "errors",
        "checks_per_minute",
        "latency_s",
        "queue_wait_s",
    )
    return {
        "summary": {k: s.get(k) for k in keys},
        "cpu_busy_mean_pct": (u.get("cpu") or {}).get("busy_mean_pct"),
        "gpu_util_mean_pct": (u.get("gpu") or {}).get("util_mean_pct"),
    }


def _dig(summary: dict, path: tuple[str, ...]) -> float | None:
    value: object = summary
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def judge(report: dict) -> list[dict]:
    """The goals of each load the run made: met only when every verdict matched its file and the figure is
    on the goal's side (not measured when the load gave no figure)."""
    out: list[dict] = []
    gpu = report.get("gpu_name") or "this GPU"
    for mix, step in (("l2-8", "load"), ("course", "load_course")):
        load = report.get(step)
        if not isinstance(load, dict):
            continue
        summary = load.get("summary") or {}
        right = summary.get("mismatches") == 0 and (summary.get("verdicts") or 0) > 0
        for what, path, bound, side in GOALS[mix]:
            measured = _dig(summary, path)
            on_side = measured is not None and (measured >= bound if side == "≥" else measured <= bound)
            out.append(
                {
                    "what": f"{what} ({LEARNERS} learners, {SLOTS} runs at once, {load.get('sandbox')}; goal "
                    f"set for an H200, measured on {gpu})",
                    "measured": measured,
                    "target": f"{side} {bound}",
                    "met": None if measured is None else (on_side and right),
                }
            )
    return out
