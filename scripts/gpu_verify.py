"""`make gpu-verify`: the GPU machine's substitute for CI, in one call of at most 9.5 minutes.

Steps, each timed and bounded, in this order (the last one run gets what is left of the budget; with `--only`,
the last one asked for, so that `--only gpu_tests` gives the GPU tests a call of their own; `environment`, the
record's header, runs with any `--only`):

1. `environment`: date, GPU, driver, Triton, torch, Python;
2. `doctor`: `tritonlab doctor --json --backend gpu`;
3. `first_check`: the first check after install (a fresh TRITONLAB_HOME: no daemon, cold Triton cache);
4. `peaks`: this GPU's measured copy bandwidth and bf16 matmul rate (the roof of every speed report);
5. `speed`: the speed line of a passing check, as the CLI prints it and in `--json`;
6. `cli_latency`: repeated `tritonlab check EXERCISE --solution` through the warm per-user check daemon
   (cli/daemon.py), median of 5 per exercise after one warm-up call; and the modules the CLI process itself
   imported (no torch, triton or NumPy);
7. `service`: repeated checks through one long-lived Service (the web path);
8. `breakdown`: the fixed costs of a GPU run in a fresh process (imports, CUDA context, first launch);
9. `gpu_tests`: the GPU-marked tests (in parallel pytest processes, planned by each file's recorded seconds
   per test: `plan_shards`) while, beside them, every kernel of `bench --all` and its torch.compile peer
   compiles once, untimed, into the caches step 11 reads;
10. `dev_check`: `tritonlab dev check --backend gpu --json` (starters fail, solutions pass, several at once);
11. `edited_kernel`: the first check of an edited vector-copy, softmax and matmul solution
    (benchmarks/edited_kernel_latency.py: a harmless change each time, so nothing is cached), against issue
    40's goals, each with its split (check child, replay child, the replay's wait for the precompile beside
    the check child, kernels precompiled, kernels the replay still compiled: grading/check/precompile.py);
12. `edited_saved`: the same edits saved first, as the web editor saves them, then checked at once or after
    the compile ahead of the save ended (service/ahead.py; `edited_kernel_latency.py --save-first`), in one
    Service; judged against the same goals (the seconds until the verdict is shown);
13. `bench`: `tritonlab bench --all --runs 3 --budget S`: the reference kernels, interleaved runs, started
    cases only while time is left; the restated targets judged from its rows (perf/targets.py);
14. `load` and 15. `load_course`, only when asked for (`--only load,load_course`: together they take a call of
    their own): issue 37's class loads through a real classroom server, the lessons 2–8 mix with every text
    its own and the whole-course mix, judged against its goals (scripts/gpuload/verify.py).

Writes `gpu-verify.json` (everything, saved after every step), `gpu-verify.md` (the summary with every target and
whether it is met) and `README.md` (the run's record: date, GPU, driver, versions, commit, command, what it measured,
its files) into the run's folder: `--runs DIR` makes it inside DIR, named `<date>-<gpu>-<commit>` at run time
(`make gpu-verify`: docs/gpu-runs/2026-12-03-h200-4ac7c77/, the form scripts/gpu_runs.py checks); `--out DIR`
writes into DIR itself. The commit is TRITONLAB_COMMIT (a tree copied to a GPU machine may carry no .git), else
git's HEAD. `--dry-run` writes all three without running anything (the plan).

Works from an installed tritonlab or a source checkout (PYTHONPATH=src): the CLI is `python -m tritonlab`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_runs  # noqa: E402  (the run folder's name and README form; stdlib and tritonlab.perf.bench only)
from gpuload import verify as class_loads  # noqa: E402  (steps load and load_course)

CLI = [sys.executable, "-m", "tritonlab"]
BUDGET_S = 570.0  # 9.5 minutes: one 10-minute GPU call always brings the report back
RESERVE_S = 10.0  # kept for writing the report
# step -> its own limit in seconds (never more than what is left of the budget)
LIMITS = {
    "environment": 60,
    "doctor": 120,
    "first_check": 120,
    "peaks": 150,
    "speed": 120,
    "cli_latency": 150,
    "service": 180,
    "breakdown": 90,
    "gpu_tests": 150,
    "dev_check": 150,
    "edited_kernel": 120,
    "edited_saved": 150,
    "bench": 600,
    "load": 200,
    "load_course": 200,
}
OPT_IN = frozenset({"load", "load_course"})  # run only when `--only` names them
LATENCY = (("vector-copy", 3.0), ("softmax", 3.0), ("matmul", 5.0))  # exercise, target through the CLI (s)
WEB_TARGET = {"vector-copy": 2.0, "softmax": 2.0, "matmul": 5.0}
FIRST_CHECK_TARGET, DEV_CHECK_TARGET = 15.0, 90.0
# the first check of an edited kernel (a harmless change each time, so no cache holds it): issue 40's goals, s
EDITED_TARGET = {"vector-copy": 4.0, "softmax": 4.0, "matmul": 8.0}
SPEED_AFTER_S = 1.5  # the speed line of a passing GPU check may follow the verdict by this much
HEAVY = ("torch", "triton", "numpy")


def sh(argv: list[str], timeout: float, env: dict | None = None, keep: int = 3000) -> dict:
    """Run a command; its exit code, wall seconds and the tail of its output, `keep` characters of its
    stderr (never raises)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = "timeout", _text(exc.stdout), _text(exc.stderr)
    except OSError as exc:  # e.g. no nvidia-smi
        code, out, err = "error", "", str(exc)
    return {
        "argv": " ".join(argv[2:] if argv[:2] == [sys.executable, "-m"] else argv),
        "code": code,
        "seconds": round(time.perf_counter() - start, 2),
        "stdout": out[-STDOUT_KEPT:],  # whole, for the JSON reports; a step that stores it trims it
        "stderr": err[-keep:],
    }


STDOUT_KEPT = 8 << 20


def _text(data: bytes | str | None) -> str:
    """A timed-out command's output (bytes even with text=True)."""
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return data or ""


def last_json(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None


def whole_json(text: str) -> dict | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


# ---- the steps: each takes (env, limit seconds) and returns what it measured ---------------------------------


def environment(env: dict, limit: float) -> dict:
    info: dict = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
    }
    smi = sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"], 30)
    info["gpu"] = smi["stdout"].strip()
    probe = sh(
        [sys.executable, "-c", "import torch, triton; print(torch.__version__, triton.__version__)"], limit
    )
    parts = probe["stdout"].split()
    info["torch"], info["triton"] = (parts + [None, None])[:2]
    return info


def doctor(env: dict, limit: float) -> dict:
    r = sh([*CLI, "doctor", "--json", "--backend", "gpu"], limit, env)
    r["report"] = whole_json(r.pop("stdout"))
    return r


def first_check(env: dict, limit: float) -> dict:
    """The very first check of a new install: its own home (no daemon yet, nothing compiled, no roof)."""
    home = Path(env["TRITONLAB_HOME"] + "-fresh")
    shutil.rmtree(home, ignore_errors=True)  # this script's own folder from an earlier run: fresh again
    fresh = dict(env, TRITONLAB_HOME=str(home))
    fresh["TRITONLAB_DAEMON_IDLE"] = "15"  # its daemon goes soon: the GPU is needed by the steps after
    r = sh([*CLI, "check", "vector-add", "--solution", "--backend", "gpu", "--json"], limit, fresh)
    verdict = whole_json(r["stdout"]) or {}
    return {
        "argv": r["argv"],
        "code": r["code"],
        "seconds": r["seconds"],
        "passed": verdict.get("passed"),
        # the check's own phases (the rest of the wall time: the CLI, the daemon's start and its probes)
        "verdict_duration_s": verdict.get("duration_s"),
        "timings": {k: v for k, v in (verdict.get("timings") or {}).items() if not isinstance(v, dict)},
        # the daemon's own start (cli/daemon.py logs its phases, seconds since its module loaded)
        "daemon_start": _daemon_start(home),
        "stderr": r["stderr"][-1500:],
    }


def _daemon_start(home: Path) -> list[dict]:
    found = []
    for log in sorted((home / "daemon").glob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith('{"daemon_start"'):
                found.append(json.loads(line)["daemon_start"])
    return found


MEASURE_PEAKS = (
    "from tritonlab import config; config.use_trusted_triton_cache(); "
    "from tritonlab.perf.peaks import get_peaks; import json; print(json.dumps(get_peaks()))"
)


# Compiles every reference kernel and torch.compile peer of `bench --all` once, untimed, into the caches the
# bench step then reads (the trusted Triton cache, inductor's cache): run beside the GPU-marked tests, so
# that the time box of the bench step goes to timing. argv: the kernel names of this process.
WARM_BENCH = """
import sys, time, torch
from tritonlab import config
config.use_trusted_triton_cache()
from tritonlab.perf.kernels import cases as C
for name in sys.argv[1:]:
    for case in C.cases_for(name, "cuda"):
        began = time.monotonic()
        args = case.make()
        for label, fn in {"triton": case.ours, **case.peers}.items():
            try:
                fn(*args)
            except Exception as exc:  # the bench step reports it; here it only costs the warm-up
                print(f"{case.label} {label}: {type(exc).__name__}: {exc}"[:300], flush=True)
        torch.cuda.synchronize()
        del args
        print(f"warm {case.label} {time.monotonic() - began:.1f} s", flush=True)
"""


def warm_bench(env: dict, processes: int = 3) -> list[subprocess.Popen]:
    """Start the bench warm-up in `processes` processes, the kernel names dealt out round-robin."""
    from tritonlab.perf.kernels import NAMES  # names only: no torch in this process

    return [
        subprocess.Popen(
            [sys.executable, "-c", WARM_BENCH, *NAMES[i::processes]],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for i in range(processes)
    ]


def peaks(env: dict, limit: float) -> dict:
    r = sh([sys.executable, "-c", MEASURE_PEAKS], limit, env)
    return last_json(r["stdout"]) or {"error": r["stderr"][-800:], "code": r["code"]}


def speed(env: dict, limit: float) -> dict:
    """The speed line of a passing GPU check, as a learner sees it (CLI text) and as tools read it (JSON)."""
    text = sh([*CLI, "check", "softmax", "--solution", "--backend", "gpu"], limit / 2, env)
    js = sh([*CLI, "check", "vector-add", "--solution", "--backend", "gpu", "--json"], limit / 2, env)
    verdict = whole_json(js["stdout"]) or {}
    lines = [line for line in text["stdout"].splitlines() if line.startswith("speed")]
    return {
        "cli_text": text["stdout"][-1500:],
        "cli_speed_line": lines[-1] if lines else None,
        "json_speed": verdict.get("speed"),
        "json_passed": verdict.get("passed"),
        "codes": [text["code"], js["code"]],
    }


def cli_check(exercise: str, env: dict, limit: float, backend: str = "gpu") -> dict:
    """`tritonlab check EXERCISE --solution --backend gpu` as a learner runs it (text): the seconds until the
    verdict line (✔/✘) was printed, and until the command ended (the speed line of a passing check comes
    after the verdict). Never raises."""
    argv = [*CLI, "--lang", "en", "check", exercise, "--solution", "--backend", backend]
    start = time.perf_counter()
    verdict_s, lines = None, []
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    timer = threading.Timer(limit, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if verdict_s is None and line.lstrip().startswith(("✔", "✘")):
                verdict_s = round(time.perf_counter() - start, 3)
        code = proc.wait()
        err = proc.stderr.read() if proc.stderr else ""
    finally:
        timer.cancel()
    wall = round(time.perf_counter() - start, 3)
    speed = next((line for line in lines if line.startswith("speed")), None)
    return {
        "wall_s": wall,
        "verdict_s": verdict_s,
        "speed_after_verdict_s": round(wall - verdict_s, 3) if verdict_s is not None and speed else None,
        "passed": code == 0,
        "code": code,
        "speed_line": speed,
        "stderr": err[-600:],
    }


def cli_latency(env: dict, limit: float, repeats: int = 5) -> dict:
    """`check EXERCISE --solution --json` through the CLI with the per-user check daemon warm: one warm-up
    call per exercise (it also compiles the kernel into the learner's cache), then `repeats` timed calls."""
    deadline = time.monotonic() + limit
    out: dict = {"exercises": []}
    for exercise, target in LATENCY:
        warm = cli_check(exercise, env, max(5.0, deadline - time.monotonic()))
        runs = []
        for _ in range(repeats):
            if time.monotonic() > deadline:
                break
            runs.append(cli_check(exercise, env, max(5.0, deadline - time.monotonic())))
        walls = [r["wall_s"] for r in runs]
        verdicts = [r["verdict_s"] for r in runs if r["verdict_s"] is not None]
        after = [r["speed_after_verdict_s"] for r in runs if r["speed_after_verdict_s"] is not None]
        out["exercises"].append(
            {
                "exercise": exercise,
                "warm_up": warm,
                "runs": runs,
                "median_wall_s": statistics.median(walls) if walls else None,
                "median_verdict_s": statistics.median(verdicts) if verdicts else None,
                "median_speed_after_verdict_s": statistics.median(after) if after else None,
                "target_s": target,
                "all_passed": bool(runs) and all(r["passed"] for r in runs),
            }
        )
    # What the CLI process itself imports when the daemon answers (Python's own import record).
    traced = sh(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "tritonlab",
            "check",
            "vector-copy",
            "--solution",
            "--backend",
            "gpu",
            "--json",
        ],
        max(5.0, deadline - time.monotonic() + 30),
        env,
    )
    modules = {
        line.split("|")[-1].strip()
        for line in traced["stderr"].splitlines()
        if line.startswith("import time:")
    }
    out["client_imports_daemon_client"] = "tritonlab.cli.daemon" in modules
    out["client_heavy_imports"] = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    out["client_module_count"] = len(modules)
    start = sh([*CLI, "--help"], 60, env)  # (`--version` asks for a command too)
    out["cli_start_s"] = start["seconds"]
    out["daemon_sockets"] = len(list((Path(env["TRITONLAB_HOME"]) / "daemon").glob("*.sock")))
    return out


SERVICE_PROBE = r"""
import json, statistics, sys, time
from tritonlab.service import Service
started = time.perf_counter()
service = Service(backend="gpu")
service.warm_up()
out = {"pool": None, "exercises": []}
for exercise_id, repeats in json.loads(sys.argv[1]):
    exercise = service.exercise(exercise_id)
    runs = []
    for _ in range(repeats):
        s = time.perf_counter()
        shown = []  # when the verdict reached the caller (the web page shows it then; the speed line follows)
        verdict = service.check(exercise, file=exercise.solution, record=False,
                                on_verdict=lambda v: shown.append(time.perf_counter() - s))
        runs.append({"wall_s": round(time.perf_counter() - s, 3), "passed": verdict.passed,
                     "verdict_s": round(shown[0], 3) if shown else None,
                     "inside_s": round(verdict.duration_s, 3), "speed": verdict.speed,
                     "timings": {k: v for k, v in verdict.timings.items() if not isinstance(v, dict)}})
    walls = [r["wall_s"] for r in runs]
    verdicts = [r["verdict_s"] for r in runs if r["verdict_s"] is not None]
    out["exercises"].append({"exercise": exercise_id, "runs": runs, "first_wall_s": walls[0],
                             "median_wall_s": statistics.median(walls),
                             "median_after_first_s": statistics.median(walls[1:] or walls),
                             "median_verdict_after_first_s": statistics.median(verdicts[1:] or verdicts)
                             if verdicts else None})
out["pool"] = service.zygote().pool
out["total_s"] = round(time.perf_counter() - started, 2)
service.close()
print(json.dumps(out))
"""


def service(env: dict, limit: float) -> dict:
    """Checks through one long-lived Service (a web-like caller): wall seconds of each `service.check`."""
    plan = [("vector-copy", 5), ("softmax", 5), ("matmul", 4)]
    r = sh([sys.executable, "-c", SERVICE_PROBE, json.dumps(plan)], limit, env)
    return last_json(r["stdout"]) or {"error": r["stderr"][-1500:], "code": r["code"]}


BREAKDOWN = r"""
import json, os, time, sys
t = {}
s = time.perf_counter(); import tritonlab.cli.app; t["cli_import_s"] = time.perf_counter() - s
s = time.perf_counter(); import numpy, torch; t["torch_import_s"] = time.perf_counter() - s
s = time.perf_counter(); import triton, triton.language as tl; t["triton_import_s"] = time.perf_counter() - s
s = time.perf_counter(); torch.zeros(1, device="cuda"); torch.cuda.synchronize(); t["cuda_init_s"] = time.perf_counter() - s

@triton.jit
def _copy(x, y, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)

x = torch.randn(1 << 20, device="cuda"); y = torch.empty_like(x)
s = time.perf_counter(); _copy[(x.numel() // 1024,)](x, y, x.numel(), BLOCK=1024); torch.cuda.synchronize()
t["first_launch_s"] = time.perf_counter() - s
s = time.perf_counter(); _copy[(x.numel() // 1024,)](x, y, x.numel(), BLOCK=1024); torch.cuda.synchronize()
t["warm_launch_s"] = time.perf_counter() - s
s = time.perf_counter(); h = torch.randn(4096, 4096, dtype=torch.float64); h.to("cuda"); torch.cuda.synchronize()
t["upload_128MiB_s"] = time.perf_counter() - s
print(json.dumps({k: round(v, 4) for k, v in t.items()}))
"""


def breakdown(env: dict, limit: float) -> dict:
    """Where a GPU run's fixed time goes, piece by piece, in a fresh process (a cold and a warm Triton cache)."""
    out = {}
    script = Path(env["TRITONLAB_HOME"]) / "breakdown_probe.py"  # @triton.jit needs its source in a file
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(BREAKDOWN)
    for label in ("cold_cache", "warm_cache"):
        r = sh([sys.executable, str(script)], limit / 2, env)
        out[label] = last_json(r["stdout"]) or {"error": r["stderr"][-800:]}
    return out


OUTCOMES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
#: pytest's `--durations` table lists each test phase that took at least this long (the shard plan's record)
DURATIONS_MIN_S = 0.5
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(\S+?\.py)::")
_SUMMARY_SECONDS = re.compile(r" in (\d+(?:\.\d+)?)s")
_SUMMARY_COUNT = re.compile(r"(\d+) (?:passed|failed|skipped|errors?|xfailed|xpassed)")


def shard_argv(files: list[str], basetemp: str) -> list[str]:
    """One shard's pytest: verbose, so every test's name is written as it starts and its outcome as it ends;
    a shard stopped at the step's limit still says which tests failed and which one it was in (a quiet run
    killed by its timeout left one `F` among dots: H100-80GB-HBM3 run 2026-12-05 (2de2963))."""
    return [
        sys.executable,
        "-m",
        "pytest",
        "-v",
        "-rfE",
        "-m",
        "gpu",
        "-p",
        "no:cacheprovider",
        f"--basetemp={basetemp}",
        "--durations=0",
        f"--durations-min={DURATIONS_MIN_S}",
        *files,
    ]


def read_shard(out: str, code: int | str) -> dict:
    """What a shard's verbose output says: its last line, the tests that failed or errored (by name), and,
    for a shard stopped at the limit, the test that was running then."""
    failed: list[str] = []
    stopped_in = ""
    for line in out.splitlines():
        if "::" not in line or line.startswith(("FAILED ", "ERROR ")):
            continue
        words = line.split()
        outcome = next((w for w in words if w in OUTCOMES), "")
        name = line.split(f" {outcome}", 1)[0].strip() if outcome else line.strip()
        if outcome in ("FAILED", "ERROR"):
            failed.append(name)
        stopped_in = "" if outcome else name
    last = (out.strip().splitlines() or [""])[-1].strip("= ")
    file_seconds: dict[str, float] = {}
    for line in out.splitlines():
        m = _DURATION.match(line.strip())
        if m:
            file_seconds[m.group(2)] = round(file_seconds.get(m.group(2), 0.0) + float(m.group(1)), 2)
    return {
        "summary": last[:300],
        "failed": failed,
        "stopped_in": stopped_in if code == "timeout" else "",
        "file_seconds": file_seconds,
    }


def recorded_rates(runs_dir: Path = ROOT / "docs" / "gpu-runs") -> dict[str, float]:
    """Seconds per GPU test of each test file, from the newest recorded run whose report holds the GPU tests'
    shards: a shard's `file_seconds` (pytest's durations table) where it has them, else the shard's seconds
    (its summary line) spread evenly over the tests it ran. Empty where no run recorded them."""
    found = []
    for report in runs_dir.glob("*/*verify.json"):
        try:
            data = json.loads(report.read_text())
            shards = data.get("gpu_tests", {}).get("shards", [])
            when = (data.get("environment") or {}).get("date") or report.parent.name[:10]
        except (OSError, ValueError, AttributeError):
            continue
        if shards:
            found.append((str(when), shards))
    for _, shards in sorted(found, key=lambda x: x[0], reverse=True):  # the newest run first
        rates: dict[str, list[float]] = {}
        for shard in shards:
            summary = shard.get("summary", "")
            seconds, counts = _SUMMARY_SECONDS.search(summary), _SUMMARY_COUNT.findall(summary)
            ran = sum(int(c) for c in counts)
            if not seconds or not ran:
                continue
            files = sorted({f.split("::", 1)[0] for f in shard.get("files", [])})
            measured, tests = shard.get("file_seconds") or {}, shard.get("file_tests") or {}
            for f in files:
                if f in measured and tests.get(f):  # written together by gpu_tests since 2026-12-06
                    rates.setdefault(f, []).append(measured[f] / tests[f])
                else:
                    rates.setdefault(f, []).append(float(seconds.group(1)) / ran)
        if rates:
            return {f: statistics.mean(v) for f, v in rates.items()}
    return {}


def plan_shards(
    by_file: dict[str, list[str]], shards: int, rates: dict[str, float]
) -> list[tuple[list[str], float]]:
    """The GPU tests' shards: each test file weighed by its recorded seconds per test (`recorded_rates`; a
    file with no record, by the median rate, or by its count where nothing was recorded), a file heavier than
    an even share split into that many runs of its own tests (pytest node ids), then the pieces given out
    heaviest first, each to the shard with the least so far. Returns (pytest targets, estimated seconds)."""
    default = statistics.median(rates.values()) if rates else 1.0
    weight = {f: len(ids) * rates.get(f, default) for f, ids in by_file.items()}
    share = sum(weight.values()) / max(1, shards)
    pieces: list[tuple[list[str], float]] = []
    for f, ids in by_file.items():
        parts = min(len(ids), max(1, -(-int(weight[f] * 1000) // max(1, int(share * 1000)))))
        if parts == 1:
            pieces.append(([f], weight[f]))
            continue
        size = -(-len(ids) // parts)
        for i in range(0, len(ids), size):
            chunk = ids[i : i + size]
            pieces.append((chunk, weight[f] * len(chunk) / len(ids)))
    groups: list[tuple[list[str], float]] = [([], 0.0) for _ in range(min(shards, len(pieces)))]
    for targets, w in sorted(pieces, key=lambda p: -p[1]):
        i = min(range(len(groups)), key=lambda g: groups[g][1])
        groups[i] = (groups[i][0] + targets, groups[i][1] + w)
    return [g for g in groups if g[0]]


def gpu_tests(env: dict, limit: float, shards: int = 0) -> dict:
    """The GPU-marked tests in `shards` pytest processes at once (`plan_shards`: by the seconds the newest
    recorded run took per test of each file, a file longer than an even share split; default: one per
    four CPU cores, at most 4: correctness tests, each mostly waiting on its own compiles and child runs, beside
    the bench's compile warm-up. None of them compares speeds: a shared GPU times nothing fairly (H200
    run 2026-12-03 (f798116)); whether attention keeps up with SDPA is one of the bench step's targets)."""
    shards = shards or max(1, min(4, (os.cpu_count() or 4) // 4))
    started = time.monotonic()
    listed = sh(
        [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "--collect-only", "-p", "no:cacheprovider"],
        min(60.0, limit),
        env,
    )
    by_file: dict[str, list[str]] = {}
    for line in listed["stdout"].splitlines():
        if "::" in line and not line.startswith(" "):
            by_file.setdefault(line.split("::", 1)[0], []).append(line.strip())
    if not by_file:
        return {
            "code": listed["code"],
            "seconds": listed["seconds"],
            "summary": "no GPU test collected",
            "stdout": listed["stdout"][-3000:],
            "stderr": listed["stderr"],
        }
    plan = plan_shards(by_file, shards, recorded_rates())
    left = max(5.0, limit - (time.monotonic() - started))
    procs = []
    for i, (files, estimate) in enumerate(plan):
        argv = shard_argv(files, f"{tempfile.gettempdir()}/gpu-verify-tests-{i}")
        procs.append(
            (
                files,
                estimate,
                subprocess.Popen(
                    argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT
                ),
            )
        )
    deadline = time.monotonic() + left
    runs = []
    for files, estimate, proc in procs:
        try:
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            code: int | str = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            out, code = _text(proc.communicate()[0]), "timeout"
        file_tests: dict[str, int] = {}
        for target in files:
            f = target.split("::", 1)[0]
            file_tests[f] = file_tests.get(f, 0) + (1 if "::" in target else len(by_file.get(f, [])))
        runs.append(
            {
                "files": files,
                "file_tests": file_tests,
                "estimated_s": round(estimate, 1),
                "code": code,
                **read_shard(out, code),
                "output": out[-4000:],
            }
        )
    codes = [r["code"] for r in runs]
    return {
        "argv": "pytest -v -m gpu (sharded by recorded seconds: plan_shards)",
        "code": 0 if all(c == 0 for c in codes) else next(c for c in codes if c != 0),
        "seconds": round(time.monotonic() - started, 2),
        "tests": sum(len(v) for v in by_file.values()),
        "summary": "; ".join(r["summary"] for r in runs),
        "shards": runs,
    }


def gpu_tests_beside_bench_warm_up(env: dict, limit: float, warm: bool = True) -> dict:
    """The GPU-marked tests while the bench's kernels compile beside them (`WARM_BENCH`); both end within
    `limit`, so nothing of either overlaps the timed steps after."""
    started = time.monotonic()
    warming = warm_bench(env) if warm else []
    report = gpu_tests(env, limit)
    lines: list[str] = []
    for proc in warming:
        try:
            out, _ = proc.communicate(timeout=max(1.0, limit - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            proc.kill()
            out = _text(proc.communicate()[0]) + "\n(stopped: the step's limit)"
        lines += out.strip().splitlines()
    if warming:
        report["bench_warm_up"] = {
            "seconds": round(time.monotonic() - started, 2),
            "codes": [proc.returncode for proc in warming],
            "output": lines[-80:],
        }
    return report


def dev_check(env: dict, limit: float) -> dict:
    r = sh([*CLI, "dev", "check", "--backend", "gpu", "--json"], limit, env, keep=200_000)
    data = whole_json(r.pop("stdout")) or {}
    items = data.get("items", [])
    progress = []  # what finished, and when, even when the step was cut (dev check's stderr lines)
    for line in r["stderr"].splitlines():
        if line.startswith('{"done"'):
            try:
                progress.append(json.loads(line))
            except ValueError:
                pass
    return {
        "argv": r["argv"],
        "code": r["code"],
        "seconds": r["seconds"],
        "ok": data.get("ok"),
        "items": len(items),
        "failed": [i["item"] for i in items if not i.get("ok")],
        "problems": data.get("problems", [])[:20],
        "progress": progress,
        "stderr": "\n".join(x for x in r["stderr"].splitlines() if not x.startswith('{"done"'))[-1500:],
    }


def edited_rows(env: dict, limit: float, out_dir: Path, record: str, *args: str) -> tuple[dict, list[dict]]:
    """Run benchmarks/edited_kernel_latency.py on EDITED_TARGET with `args`; its exit, time and stderr, and the
    rows it wrote to `record` in `out_dir` (none when it wrote nothing)."""
    run = sh(
        [sys.executable, "benchmarks/edited_kernel_latency.py", "--out", str(out_dir), *args, *EDITED_TARGET],
        limit, env,
    )  # fmt: skip
    path = out_dir / record
    rows = json.loads(path.read_text()).get("rows", []) if path.is_file() else []
    return {"code": run["code"], "seconds": run["seconds"], "stderr": run["stderr"]}, rows


def edited_kernel(env: dict, limit: float, out_dir: Path) -> dict:
    """The first check of edited code: benchmarks/edited_kernel_latency.py, one edit per exercise of
    EDITED_TARGET (each a fresh change of the solution, so neither the compile caches nor the daemon's last
    check hold it). Its rows (wall time, verdict, phases) land in edited-kernel.json beside the report."""
    run, rows = edited_rows(env, limit, out_dir, "edited-kernel.json", "--repeats", "1")
    exercises = []
    for exercise, target in EDITED_TARGET.items():
        edited = [
            r for r in rows if r.get("exercise") == exercise and r.get("edit") is not None
        ]  # no warm-up
        walls, passed = [r["wall_s"] for r in edited], [r.get("exit") == 0 for r in edited]
        exercises.append({
            "exercise": exercise, "target_s": target, "walls_s": walls,
            "median_s": statistics.median(walls) if walls else None, "all_passed": bool(passed) and all(passed),
            "splits": [split(r.get("phases") or {}) for r in edited],
        })  # fmt: skip
    return {**run, "exercises": exercises}


def edited_saved(env: dict, limit: float, out_dir: Path) -> dict:
    """Edits saved first, then checked (benchmarks/edited_kernel_latency.py --save-first): the compile ahead of
    a save (service/ahead.py) against checking at once. Rows land in edited-kernel-saved.json."""
    run, rows = edited_rows(env, limit, out_dir, "edited-kernel-saved.json", "--repeats", "2", "--save-first")
    exercises = []
    for exercise, target in EDITED_TARGET.items():
        for mode in ("at once", "after the compile ahead"):
            got = [r for r in rows if r.get("exercise") == exercise and r.get("mode") == mode]
            shown = [r["shown_s"] for r in got]
            exercises.append({
                "exercise": exercise, "mode": mode, "target_s": target, "shown_s": shown,
                "median_s": round(statistics.median(shown), 3) if shown else None,
                "all_passed": bool(got) and all(r.get("passed") for r in got),
                "ahead": [(r.get("ahead") or {}).get("status") for r in got],
            })  # fmt: skip
    return {**run, "exercises": exercises}


SPLIT = (
    ("check child", "check_child_s"), ("replay child", "replay_child_s"),
    ("check child's wait", "precompile_first_wait_s"), ("replay's wait", "precompile_wait_s"),
    ("precompile", "precompile_s"), ("precompiled", "precompiled"), ("copied to the learner", "precompile_copied"),
    ("replay compile ahead", "replay_ahead_s"), ("replay compiled", "replay_compiled"),
)  # fmt: skip


def split(phases: dict) -> str:
    """Where an edited check's time went: the check child, the replay child, the replay's wait for the
    precompile beside the check child, and how many kernels each compiled (grading/check/precompile.py)."""
    return ", ".join(f"{label} {phases[key]}" for label, key in SPLIT if key in phases) or "no split reported"


def bench_all(env: dict, limit: float, out_dir: Path) -> dict:
    """The reference kernels, 3 interleaved runs, no case started after the budget; rows to bench-all.json."""
    # a case started just before the end finishes (its kernels compiled by the warm-up beside the GPU tests;
    # one that still compiles, torch.compile included, takes up to about a minute)
    budget = max(1.0, limit - 60.0)
    argv = [*CLI, "bench", "--all", "--json", "--runs", "3", "--budget", f"{budget:.0f}"]
    r = sh(argv, limit, env)
    data = whole_json(r["stdout"]) if r["code"] == 0 else None
    if data is None:
        return {"argv": r["argv"], "code": r["code"], "seconds": r["seconds"], "stderr": r["stderr"][-1500:]}
    (out_dir / "bench-all.json").write_text(json.dumps(data, indent=1))
    return {
        "argv": r["argv"],
        "code": r["code"],
        "seconds": r["seconds"],
        "budget_s": budget,
        "rows": len(data.get("rows", [])),
        "seconds_per_run": _per_run(data.get("case_seconds", [])),
        "slowest_cases": sorted(data.get("case_seconds", []), key=lambda c: -c["seconds"])[:12],
        "skipped": data.get("skipped", []),
        "targets": data.get("targets", []),
        "file": "bench-all.json",
    }


def _per_run(cases: list[dict]) -> dict[str, float]:
    runs: dict[str, float] = {}
    for c in cases:
        runs[str(c["run"])] = round(runs.get(str(c["run"]), 0.0) + c["seconds"], 1)
    return runs


# ---- the verdicts ----------------------------------------------------------------------------------------


def judge(report: dict) -> list[dict]:
    """Every latency and process target of the run: what, measured, target, met (None: not measured)."""
    out: list[dict] = []

    def add(what: str, measured: float | None, target: float, ok: bool | None = None) -> None:
        met = None if measured is None else (measured <= target if ok is None else ok and measured <= target)
        out.append({"what": what, "measured": measured, "target": f"≤ {target}", "met": met})

    for c in report.get("cli_latency", {}).get("exercises", []):
        n = len(c["runs"])
        what = f"CLI check {c['exercise']}: verdict printed (median of {n}, warm daemon), s"
        add(what, c.get("median_verdict_s"), c["target_s"], c["all_passed"])
        if c.get("median_speed_after_verdict_s") is not None:
            what = f"CLI check {c['exercise']}: speed line after the verdict (median), s"
            add(what, c["median_speed_after_verdict_s"], SPEED_AFTER_S)
        what = f"CLI check {c['exercise']}: whole command (median of {n}), s"
        out.append({"what": what, "measured": c["median_wall_s"], "target": "(reported)", "met": None})
    for c in report.get("service", {}).get("exercises", []):
        target = WEB_TARGET.get(c["exercise"], 5.0)
        passed = all(r["passed"] for r in c["runs"])
        add(
            f"web path (one Service) {c['exercise']}: verdict shown, median after the first, s",
            c.get("median_verdict_after_first_s"),
            target,
            passed,
        )
        what = f"web path (one Service) {c['exercise']}: with the speed line, median after the first, s"
        out.append({"what": what, "measured": c["median_after_first_s"], "target": "(reported)", "met": None})
    first = report.get("first_check") or {}
    if "seconds" in first:
        add("first check after install, s", first["seconds"], FIRST_CHECK_TARGET, bool(first.get("passed")))
    tests = report.get("gpu_tests") or {}
    if "code" in tests:
        out.append(
            {
                "what": f"GPU-marked tests pass ({tests.get('tests')} tests)",
                "measured": f"exit {tests['code']}: {tests.get('summary')}"
                + "".join(f"; failed: {n}" for sh in tests.get("shards", []) for n in sh.get("failed", []))
                + "".join(
                    f"; stopped in: {sh['stopped_in']}"
                    for sh in tests.get("shards", [])
                    if sh.get("stopped_in")
                ),
                "target": "exit 0, tests ran",
                "met": tests["code"] == 0 and "passed" in str(tests.get("summary")),
            }
        )
    dc = report.get("dev_check") or {}
    if "seconds" in dc:
        add("dev check --backend gpu, s", dc["seconds"], DEV_CHECK_TARGET, dc.get("code") == 0)
    cli = report.get("cli_latency") or {}
    if "client_heavy_imports" in cli:
        heavy = cli["client_heavy_imports"]
        out.append(
            {
                "what": "CLI process imports torch/triton/numpy (daemon answering)",
                "measured": ", ".join(heavy) or "none",
                "target": "none",
                "met": not heavy and cli.get("client_imports_daemon_client"),
            }
        )
    spd = report.get("speed") or {}
    if spd:
        shown = bool(spd.get("cli_speed_line")) and bool(spd.get("json_speed"))
        out.append(
            {
                "what": "speed report on a passing check (CLI line and JSON)",
                "measured": shown,
                "target": "shown",
                "met": shown,
            }
        )
    for c in (report.get("edited_kernel") or {}).get("exercises", []):
        what = f"first check of an edited {c['exercise']} kernel (CLI, median of {len(c['walls_s'])}), s"
        if c.get("splits"):
            what += f" ({'; '.join(c['splits'])})"
        add(what, c["median_s"], c["target_s"], c["all_passed"])
    for c in (report.get("edited_saved") or {}).get("exercises", []):
        what = (
            f"edited {c['exercise']} saved, then checked {c['mode']} (verdict shown, median of "
            f"{len(c['shown_s'])}; compile ahead: {', '.join(str(a) for a in c['ahead'])}), s"
        )
        add(what, c["median_s"], c["target_s"], c["all_passed"])
    out += class_loads.judge(report)
    if "total_s" in report:
        add("the whole gpu-verify, s", report["total_s"], BUDGET_S)
    return out


def mark(met: object) -> str:
    return {True: "met", False: "**short**", None: "not measured"}.get(met, str(met))  # type: ignore[arg-type]


def summary_md(report: dict) -> str:
    e = report.get("environment") or {}
    lines = [
        "# GPU verification run (`make gpu-verify`)",
        "",
        f"- date: {e.get('date')}; GPU: {e.get('gpu')}; torch {e.get('torch')}; triton {e.get('triton')}; "
        f"python {e.get('python')}",
        f"- git commit: {report.get('commit')}; whole script {report.get('total_s')} s of {report.get('budget_s', BUDGET_S):.0f}"
        + (" — **dry run: nothing was run**" if report.get("dry_run") else ""),
        "",
        "## Steps",
        "",
        "| step | seconds | limit (s) | result |",
        "|---|---|---|---|",
    ]
    for name, info in report.get("steps", {}).items():
        lines.append(f"| {name} | {info.get('seconds')} | {info.get('limit_s')} | {info.get('status')} |")
    lines += ["", "## Targets", "", "| target | measured | wanted | status |", "|---|---|---|---|"]
    for t in report.get("targets", []):
        lines.append(f"| {t['what']} | {t['measured']} | {t['target']} | {mark(t['met'])} |")
    bench = report.get("bench") or {}
    if bench.get("targets"):
        lines += [
            "",
            "## Reference kernels (restated targets, `bench --all --runs 3`, medians; spread = runs)",
            "",
        ]
        lines += [
            "| target | measured | spread | runs | wanted | status | measured cause (short ones) |",
            "|---|---|---|---|---|---|---|",
        ]
        for t in bench["targets"]:
            m = t.get("measured")
            measured = "n/a" if m is None else f"{m:.3g}{t['unit']}"
            spread = "–".join(map(str, t["spread"])) if t.get("spread") else ""
            lines.append(
                f"| {t['what']} | {measured} | {spread} | {t.get('runs')} | ≥ {t['target']}{t['unit']} "
                f"| {mark(t['met'])} | {t.get('cause', '')} |"
            )
        if bench.get("skipped"):
            lines.append(
                f"\nNot timed in the time box ({len(bench['skipped'])}): {', '.join(bench['skipped'])}"
            )
    first = report.get("first_check") or {}
    if first.get("seconds") is not None:
        lines += [
            "",
            f"## First check after install: {first['seconds']} s (CLI wall, the speed report included)",
            "",
        ]
        for phases in first.get("daemon_start") or []:
            lines.append(f"- daemon start, seconds since its module loaded: {json.dumps(phases)}")
        lines.append(f"- the check's own phases: {json.dumps(first.get('timings'))}")
    cli = report.get("cli_latency") or {}
    if cli.get("exercises"):
        lines += ["", "## CLI check latency (warm daemon; wall seconds of `python -m tritonlab check`)", ""]
        lines += [
            "| exercise | warm-up (s) | verdict at (s) | whole command (s) | median verdict / whole (s) | all passed |"
        ]
        lines += ["|---|---|---|---|---|---|"]
        for c in cli["exercises"]:
            verdicts = ", ".join(str(r.get("verdict_s")) for r in c["runs"])
            walls = ", ".join(str(r["wall_s"]) for r in c["runs"])
            lines.append(
                f"| {c['exercise']} | {c.get('warm_up', {}).get('wall_s')} | {verdicts} | {walls} "
                f"| {c.get('median_verdict_s')} / {c['median_wall_s']} | {c['all_passed']} |"
            )
        lines.append(
            f"\nCLI start (`--help`): {cli.get('cli_start_s')} s; modules the CLI process imported "
            f"while the daemon answered: {cli.get('client_module_count')}, of them torch/triton/numpy: "
            f"{cli.get('client_heavy_imports')}"
        )
    svc = report.get("service") or {}
    if svc.get("exercises"):
        lines += ["", f"## Check latency through one Service (web path; pool={svc.get('pool')})", ""]
        lines += ["| exercise | first (s) | median after first (s) | runs (s) |", "|---|---|---|---|"]
        for c in svc["exercises"]:
            walls = ", ".join(str(r["wall_s"]) for r in c["runs"])
            lines.append(f"| {c['exercise']} | {c['first_wall_s']} | {c['median_after_first_s']} | {walls} |")
    spd = report.get("speed") or {}
    if spd:
        lines += ["", "## Speed line of a passing check", ""]
        lines.append(f"- CLI (softmax): {spd.get('cli_speed_line')}")
        lines.append(f"- JSON (vector-add): `{json.dumps(spd.get('json_speed'))}`")
    if report.get("peaks"):
        lines.append(f"- roof: `{json.dumps(report.get('peaks'))[:300]}`")
    if report.get("breakdown"):
        lines += ["", "## Fixed costs of a GPU run in a fresh process", ""]
        for label, parts in report["breakdown"].items():
            lines.append(f"- {label}: " + ", ".join(f"{k} {v}" for k, v in parts.items()))
    dc = report.get("dev_check") or {}
    if dc:
        lines += [
            "",
            f"## dev check --backend gpu: exit {dc.get('code')}, {dc.get('items')} items, "
            f"{dc.get('seconds')} s; failed: {dc.get('failed')}",
        ]
        progress = dc.get("progress") or []
        if progress:
            lines += [
                "",
                "| finished | at (s) | check (s) | passed | cases / check run / replay / judge (s) |",
                "|---|---|---|---|---|",
            ]
            for p in progress:
                t = p.get("timings") or {}
                parts = " / ".join(
                    str(t.get(k, "")) for k in ("cases_s", "check_run_s", "replay_s", "judge_s")
                )
                lines.append(
                    f"| {p.get('done')} | {p.get('at_s')} | {p.get('seconds', '')} | "
                    f"{p.get('passed', p.get('error', ''))} | {parts} |"
                )
    tests = report.get("gpu_tests") or {}
    if tests:
        lines += ["", f"## GPU-marked tests: exit {tests.get('code')}, {tests.get('tests')} tests", ""]
        for shard in tests.get("shards", []):
            counts = shard.get("file_tests") or {f: 0 for f in shard["files"]}
            named = ", ".join(
                f"{f} ({n} tests)" if n and any("::" in t for t in shard["files"]) else f
                for f, n in counts.items()
            )
            lines.append(f"- {named}: exit {shard['code']}: {shard['summary']}")
            # a finished shard's short summary says why each test failed; a shard stopped at the limit wrote
            # none, and its verbose lines name the failures and the test it was in
            said = [x for x in shard["output"].splitlines() if x.startswith(("FAILED ", "ERROR "))]
            lines += [f"  - {x}" for x in said[:30]]
            lines += [
                f"  - failed: {x}" for x in shard.get("failed", [])[:30] if not any(x in y for y in said)
            ]
            if shard.get("stopped_in"):
                lines.append(f"  - stopped at the limit in: {shard['stopped_in']}")
    sandbox = ((report.get("doctor") or {}).get("report") or {}).get("sandbox", {})
    if sandbox:
        lines += ["", f"## Sandbox on the GPU (doctor): hardened={sandbox.get('hardened')}", ""]
        lines.append(f"- reason: {sandbox.get('reason')}")
    return "\n".join(lines) + "\n"


# ---- the run's record ------------------------------------------------------------------------------------------


def gpu_name() -> str:
    """nvidia-smi's name of the first GPU ("" without one)."""
    return gpu_runs.first_gpu()


def run_folder(runs: Path, commit: str, gpu: str, date: str | None = None) -> Path:
    """`runs/<date>-<gpu>-<commit>` for a run starting now (UTC date). Refuses a folder that already holds a run:
    a second run of the same commit on the same day and GPU goes where `--out` says."""
    date = date or dt.datetime.now(dt.UTC).date().isoformat()
    folder = runs / gpu_runs.folder_name(date, gpu or "none", commit)
    if folder.is_dir() and any(folder.iterdir()):
        raise FileExistsError(
            f"{folder} already holds a run of commit {commit[:7]} on this GPU today: pass --out DIR for another one"
        )
    return folder


def _date_line(iso: str | None) -> str:
    try:
        when = dt.datetime.fromisoformat(iso or "")
    except ValueError:
        return dt.datetime.now(dt.UTC).date().isoformat() + " (the script's environment step did not run)"
    return when.astimezone(dt.UTC).strftime("%Y-%m-%d, %H:%M UTC")


def _gpu_line(smi: str | None) -> str:
    parts = [x.strip() for x in (smi or "").split(",")]
    if not parts[0]:
        return "not measured (the environment step did not run)"
    name, driver, memory = (parts + ["", ""])[:3]
    return f"{name}{f' ({memory})' if memory else ''}{f', driver {driver}' if driver else ''}"


def readme_text(report: dict, out: Path, argv: list[str]) -> str:
    """The run folder's README: the record's header, what was measured in short, and every file of the folder."""
    e = report.get("environment") or {}
    commit = str(report.get("commit") or "")
    targets = [t for t in report.get("targets", []) if t.get("met") is not None]
    kernel = [t for t in (report.get("bench") or {}).get("targets", []) if t.get("met") is not None]
    short = [t["what"] for t in targets + kernel if t["met"] is False]
    ran = [n for n, i in report.get("steps", {}).items() if i.get("status") == "ran"]
    body = [
        "## What it measured",
        "",
        "`make gpu-verify` (`scripts/gpu_verify.py`): "
        + ("**a dry run: nothing was run**. " if report.get("dry_run") else "")
        + f"{len(ran)} of {len(report.get('steps', {}))} steps ran in {report.get('total_s')} s "
        f"of a {report.get('budget_s', BUDGET_S):.0f} s budget ({', '.join(ran) or 'none'}). "
        f"Latency and process targets: {sum(bool(t['met']) for t in targets)} of {len(targets)} met; "
        f"reference-kernel targets: {sum(bool(t['met']) for t in kernel)} of {len(kernel)} met.",
    ]
    if short:
        body += ["", "Short: " + "; ".join(short) + "."]
    body += ["", "Every target, step and figure is in `gpu-verify.md`; all of it, raw, in `gpu-verify.json`."]
    known = {
        "gpu-verify.json": "the whole report: every step, its seconds and what it measured",
        "gpu-verify.md": "its summary: every target, met or short",
        "bench-all.json": "`tritonlab bench --all --json --runs 3`: the reference kernels' rows and targets",
        "load-l2-8.json": "step `load`: `scripts/load_gpu.py`'s whole report, every check's record",
        "load-course.json": "step `load_course`: `scripts/load_gpu.py`'s whole report, every check's record",
    }
    present = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != "README.md")
    files = [(name, known.get(name, "(added by the command that ran this script)")) for name in present]
    fields = {
        "date": _date_line(e.get("date")),
        "GPU": _gpu_line(e.get("gpu")),
        "software": f"Triton {e.get('triton')}, torch {e.get('torch')}, Python {e.get('python')}"
        if e
        else "not measured (the environment step did not run)",
        "commit": commit + (" (the tree had changes not committed)" if report.get("dirty") else ""),
        "command": "`python scripts/gpu_verify.py " + " ".join(argv) + "` (`make gpu-verify`)",
    }
    date = fields["date"][:10]
    gpu = report.get("gpu_name") or (e.get("gpu") or "").split(",")[0] or "none"
    title = f"{gpu_runs.gpu_label(gpu)} run {date} ({commit[:7]}): `make gpu-verify`"
    return gpu_runs.readme(title, fields, "\n".join(body), files)


def _dirty() -> bool | None:
    """Whether the tree differs from its commit (None: no git here)."""
    r = sh(["git", "status", "--porcelain", "--untracked-files=no"], 10)
    return bool(r["stdout"].strip()) if r["code"] == 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--runs", type=Path, help="make the run's folder <date>-<gpu>-<commit> in this folder (docs/gpu-runs)"
    )
    where.add_argument("--out", type=Path, help="write the reports into this folder itself")
    parser.add_argument("--repeats", type=int, default=5, help="timed CLI checks per exercise (default 5)")
    parser.add_argument("--only", default="", help="comma-separated steps to run (default: all)")
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help="TRITONLAB_HOME of the run (default: a folder in the system's temp folder, so that --out holds "
        "only the report: caches, sockets and run folders stay out of it)",
    )
    parser.add_argument("--dry-run", action="store_true", help="write the plan as the report; run nothing")
    parser.add_argument(
        "--budget", type=float, default=BUDGET_S, help=f"seconds for the whole run ({BUDGET_S:.0f})"
    )
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    unknown = only - set(LIMITS)
    if unknown:
        parser.error(f"unknown step(s) {', '.join(sorted(unknown))}; steps: {', '.join(LIMITS)}")
    if only:  # the run's record names its date, GPU, driver and versions whatever else it ran (a few seconds)
        only.add("environment")
    # A copy of the tree sent to a GPU machine may carry no (or a stale) .git: the caller can name the commit.
    commit = os.environ.get("TRITONLAB_COMMIT") or gpu_runs.current_commit()
    gpu = gpu_name()
    if args.runs is not None:
        try:
            args.out = run_folder(args.runs, commit, gpu)
        except (ValueError, FileExistsError) as exc:
            parser.exit(2, f"gpu_verify: {exc}\n")
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"[gpu-verify] writing the run into {args.out}", flush=True)
    started = time.monotonic()
    # The daemons the CLI checks start end a minute after the script (instead of ten).
    env = dict(
        os.environ,
        TRITONLAB_HOME=str(
            (args.home or Path(tempfile.gettempdir()) / "tritonlab-gpu-verify-home").resolve()
        ),
        PYTHONUNBUFFERED="1",
        TRITONLAB_DAEMON_IDLE="60",
    )
    report: dict = {
        "steps": {},
        "dry_run": args.dry_run,
        "budget_s": args.budget,
        "commit": commit,
        "gpu_name": gpu,
    }
    if not os.environ.get("TRITONLAB_COMMIT"):
        report["dirty"] = _dirty()

    def save() -> None:  # after every step, so a run cut short still leaves what it measured
        (args.out / "gpu-verify.json").write_text(json.dumps(report, indent=1, default=str))

    steps: dict[str, Callable[[dict, float], object]] = {
        "environment": environment,
        "doctor": doctor,
        "first_check": first_check,
        "peaks": peaks,
        "speed": speed,
        "cli_latency": lambda e, s: cli_latency(e, s, args.repeats),
        "service": service,
        "breakdown": breakdown,
        "gpu_tests": gpu_tests_beside_bench_warm_up,
        "dev_check": dev_check,
        "edited_kernel": lambda e, s: edited_kernel(e, s, args.out),
        "edited_saved": lambda e, s: edited_saved(e, s, args.out),
        "bench": lambda e, s: bench_all(e, s, args.out),
        "load": lambda e, s: class_loads.run_load(e, s, args.out, "l2-8"),
        "load_course": lambda e, s: class_loads.run_load(e, s, args.out, "course"),
    }
    asked = [name for name in steps if name in only] if only else [n for n in steps if n not in OPT_IN]
    # the last step this run makes gets what is left of the budget: `--only gpu_tests` in a call of its own
    # gives the GPU tests the whole call (they outgrew their 150 s beside the other steps: 158 tests in the
    # H100-80GB-HBM3 run 2026-12-05 (2de2963))
    last = asked[-1]
    for name, step in steps.items():
        left = args.budget - RESERVE_S - (time.monotonic() - started)
        limit = left if name == last else min(LIMITS[name], left)
        info: dict = {"limit_s": round(limit, 1), "seconds": 0.0}
        if name not in asked:
            info["status"] = (
                "not asked for (--only)" if only else "not asked for (run with --only load,load_course)"
            )
        elif args.dry_run:
            info["status"] = "dry run: not run"
        elif limit < (60 if name == "bench" else 5):
            info["status"] = "skipped: the time budget is spent"
        else:
            t0 = time.monotonic()
            try:
                report[name] = step(env, limit)
                info["status"] = "ran"
            except Exception as exc:  # noqa: BLE001 - one broken step must not lose the others' results
                report[name] = {"error": f"{type(exc).__name__}: {exc}"}
                info["status"] = f"error: {type(exc).__name__}"
            info["seconds"] = round(time.monotonic() - t0, 1)
        report["steps"][name] = info
        print(f"[gpu-verify] {name}: {info['status']} ({info['seconds']} s)", flush=True)
        save()
    report["total_s"] = round(time.monotonic() - started, 1)
    report["targets"] = judge(report)
    save()
    (args.out / "gpu-verify.md").write_text(summary_md(report))
    (args.out / "README.md").write_text(readme_text(report, args.out, argv))
    print(summary_md(report))
    print(f"[gpu-verify] the run's record: {args.out}/README.md")
    failed = [t for t in report["targets"] if t["met"] is False]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
