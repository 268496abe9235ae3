"""Measured capacity (issue 37): a mixed workload of checks through the web API of a real classroom server.

    python scripts/load_gpu.py --backend gpu --executor local --mix l2-8 --learners 60 --checks 240 --rate 240
    python scripts/load_gpu.py --backend gpu --executor ray --mix course --learners 40 --checks 120 --rate 90
    python scripts/load_gpu.py --backend interpreter --learners 3 --checks 6 --exercises vector-copy,vector-add

It makes a class in a fresh TRITONLAB_HOME (SQLite) with the real CLI (`classroom init`, `classroom add
--csv`), starts `tritonlab serve --classroom` on loopback (with `--executor ray`: first a one-node Ray
cluster on loopback, token auth, as scripts/ray_throughput.py starts it), logs N learners in through the web
API, sends `--warmup` checks (not counted), then submits `--checks` checks (scripts/gpuload/plan.py: the
mix's exercises in turn, right and wrong files, every `--timeout-every`-th an endless host loop; with
`--distinct` every check's text unlike any other's, as learners' own files are, so that no check finds its
kernels in the class's replay cache from another learner's check of the same course file) as those learners:
at `--rate` checks a minute (each to a learner whose last job has ended), or with `--rate 0` each learner
again as soon as its last job ended. It samples GPU and CPU utilisation meanwhile
(scripts/gpuload/sampler.py) and reports checks per minute, latency (submission to verdict) p50/p95, queue
wait (the verdict's `timings.queue_wait_s`), verdicts by kind and every verdict unlike what its file must
give, as one JSON line (and the whole record with `--out`) and as a markdown table (`--write FILE`: the
section between `<!-- gpu-load-MIX-EXECUTOR-BACKEND:begin/end -->` markers is replaced, else appended).

Bounded: at most `--checks` checks and `--max-seconds` for the whole run (set-up included); at that point
what is still running is cut and counted as unfinished. Everything it started (the server and its runs, the
Ray cluster, the class's folder) is stopped and removed at the end, on Ctrl-C and on SIGTERM too. `--env
KEY=VALUE` (repeatable) and `--slots N` (TRITONLAB_SLOTS) are passed to the server and the cluster.
`--hostile FILE:EXERCISE` (repeatable) adds a learner of the class who submits FILE for EXERCISE again as soon as
each of its checks ends, for the whole load (scripts/gpuload/hostile/ holds such files; any learner file will
do): its checks are left out of the figures above and reported on their own (`hostile`), so a run with it
against one without tells what one such learner does to the rest of the class.
Exit 0 when every check got a verdict matching its file, 1 otherwise (2 when the run could not start).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpuload import plan as workload  # noqa: E402
from gpuload.load import Deadline, Load, log_in, warm_up  # noqa: E402
from gpuload.report import warm_per_check  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SLOTS_VARIABLE = "TRITONLAB_SLOTS"
TEARDOWN_S = 20.0  # the server's own shutdown (its runs stopped, mounts released) before SIGKILL


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", choices=("local", "ray"), default="local")
    parser.add_argument("--backend", choices=("gpu", "interpreter"), default="interpreter")
    parser.add_argument(
        "--mix", choices=workload.MIXES, default="l2-8", help="l2-8: lessons 2-8; course: all"
    )
    parser.add_argument("--exercises", default="", help="comma-separated: only these exercises of the mix")
    parser.add_argument(
        "--learners", type=int, default=20, help="classroom learners (one job in flight each)"
    )
    parser.add_argument("--checks", type=int, default=100, help="checks to submit (the warm-up not counted)")
    parser.add_argument("--rate", type=float, default=0.0, help="checks a minute to offer (0: closed loop)")
    parser.add_argument(
        "--max-seconds", type=float, default=300.0, help="the whole run's bound, set-up included"
    )
    parser.add_argument("--warmup", type=int, default=1, help="checks of a solution first, not counted")
    parser.add_argument("--wrong-share", type=float, default=0.5, help="share of an exercise's checks wrong")
    parser.add_argument(
        "--timeout-every", type=int, default=50, help="every Nth check an endless loop (0: none)"
    )
    parser.add_argument("--seed", type=int, default=37, help="the plan's order and wrong files")
    parser.add_argument(
        "--rechecks",
        type=int,
        default=1,
        help="each check then edited and checked again by the same learner, N checks in all (1: none)",
    )
    parser.add_argument(
        "--distinct",
        action="store_true",
        help="every check's text unlike any other's (as learners' own files are): no replay-cache hit between them",
    )
    parser.add_argument("--slots", type=int, default=None, help=f"runs per GPU: sets {SLOTS_VARIABLE}")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="for the server")
    parser.add_argument(
        "--ray-units", type=int, default=1, help="ray: tritonlab_interpreter units on the node"
    )
    parser.add_argument(
        "--hostile",
        action="append",
        default=[],
        metavar="FILE:EXERCISE",
        help="one more learner who submits FILE for EXERCISE back to back, not counted (repeatable)",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the whole report (every check) here")
    parser.add_argument("--write", type=Path, default=None, help="replace or append this markdown section")
    args = parser.parse_args(argv)
    for name in ("learners", "checks", "rechecks"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.max_seconds <= 0 or args.rate < 0 or args.warmup < 0 or args.timeout_every < 0:
        parser.error("--max-seconds must be positive; --rate, --warmup and --timeout-every not negative")
    if args.slots is not None and args.slots < 1:
        parser.error("--slots must be at least 1")
    args.extra_env = extra_env(parser, args)
    args.hostile_items = hostile_items(parser, args.hostile)
    return args


def hostile_items(parser: argparse.ArgumentParser, pairs: list[str]) -> list[workload.Item]:
    """`--hostile FILE:EXERCISE`, each as the item its learner submits (the file read now; the exercise one of
    the course's)."""
    known = {e.id for e in workload.exercises()}
    items = []
    for n, pair in enumerate(pairs):
        file, sep, exercise = pair.rpartition(":")
        path = Path(file)
        if not sep or exercise not in known or not path.is_file():
            parser.error(
                f"--hostile {pair!r}: expected FILE:EXERCISE, a file that exists and a course exercise"
            )
        items.append(workload.Item(-1000 - n, exercise, "hostile", str(path), path.read_text()))
    return items


def extra_env(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    found = {}
    for pair in args.env:
        key, sep, value = pair.partition("=")
        if not sep or not key or not key.replace("_", "").isalnum():
            parser.error(f"--env {pair!r}: expected KEY=VALUE")
        found[key] = value
    if args.slots is not None:
        found[SLOTS_VARIABLE] = str(args.slots)
    return found


def on_sigterm(signum: int, _frame: object) -> None:
    raise SystemExit(f"stopped by signal {signum}")


# ---- the class and the server ---------------------------------------------------------------------------


def server_env(home: Path, args: argparse.Namespace) -> dict[str, str]:
    src = str(ROOT / "src")
    return (
        dict(
            os.environ,
            TRITONLAB_HOME=str(home),
            TRITONLAB_COURSE=str(workload.COURSE),
            TRITONLAB_BACKEND=args.backend,
            TRITONLAB_EXECUTOR=args.executor,
            TRITONLAB_DATABASE_URL=f"sqlite:///{home / 'classroom.db'}",
            PYTHONPATH=src + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
        )
        | args.extra_env
    )


def make_class(env: dict, home: Path, users: list[tuple[str, str]], deadline: Deadline) -> None:
    """`classroom init` and `classroom add --csv`, the real CLI, as scripts/load_classroom.py makes its class."""

    def cli(*argv: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "tritonlab", *argv],
            env=env,
            capture_output=True,
            text=True,
            timeout=max(1.0, deadline.left()),
        )
        if done.returncode != 0:
            raise RuntimeError(f"tritonlab {' '.join(argv)} failed: {done.stderr[-2000:]}")

    cli("classroom", "init", "--name", "GPU load", "--json")
    roster = home / "roster.csv"
    rows = "".join(
        f"{name},Load learner {i},learner,{password}\n" for i, (name, password) in enumerate(users)
    )
    roster.write_text("username,display_name,role,password\n" + rows)
    cli("classroom", "add", "--csv", str(roster), "--json")


def attempt(step: object) -> str:
    """Run one clean-up step; a step that fails is reported and the others still run."""
    try:
        step()  # type: ignore[operator]
    except BaseException as exc:  # noqa: BLE001 - every step runs whatever the one before did
        return f"{getattr(step, '__qualname__', step)}: {type(exc).__name__}: {exc}"[:300]
    return ""


def stop_server(server: object) -> None:
    """SIGTERM (the server stops its runs and releases their mounts), SIGKILL after TEARDOWN_S, then whatever
    it had started and left behind."""
    from tritonlab.runs.zygote import descendants

    proc = getattr(server, "proc", None)
    if proc is None or proc.poll() is not None:
        return
    below = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=TEARDOWN_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for pid in below:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


# ---- hostile learners --------------------------------------------------------------------------------------


def hostile_loop(learner: object, item: object, deadline: Deadline, stop: threading.Event, out: list) -> None:
    """One hostile learner: its file checked again as soon as each check ends, until the load ends."""
    while not stop.is_set() and not deadline.passed():
        try:
            record = learner.check(item, read_timeout=max(1.0, deadline.left()))  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - a broken stream at the load's end is its end
            record = {"exercise": item.exercise, "error": f"{type(exc).__name__}: {exc}"[:300]}  # type: ignore[attr-defined]
        out.append(record)


def hostile_summary(records: list[dict]) -> dict:
    """The hostile learners' checks, on their own: how many, their verdicts' kinds, the cut and broken ones."""
    kinds: dict[str, int] = {}
    for r in records:
        if "passed" in r:
            for kind in r["kinds"] if not r["passed"] else ["passed"]:
                kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "checks": len(records),
        "verdicts": sum("passed" in r for r in records),
        "unfinished": sum("passed" not in r and bool(r.get("unfinished")) for r in records),
        "errors": sum("passed" not in r and not r.get("unfinished") for r in records),
        "verdict_kinds": dict(sorted(kinds.items())),
        "rate_limited_429": sum(r.get("rate_limited", 0) for r in records),
    }


# ---- the run ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import httpx  # noqa: F401 - the learners' client
    except ImportError:
        print(
            "load_gpu.py needs httpx (`pip install httpx`, or carry its wheel to the GPU machine)",
            file=sys.stderr,
        )
        return 2
    from gpuload.learner import WebLearner
    from gpuload.report import markdown, summarize
    from gpuload.sampler import Sampler
    from load_classroom import Server, free_port, remove_home
    from load_test import write_section
    from ray_throughput import LocalCluster

    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C, even where a shell ignored it for us
    deadline = Deadline(args.max_seconds)
    started_unix = time.time()
    only = [e.strip() for e in args.exercises.split(",") if e.strip()]
    chosen = workload.mix_exercises(args.mix, only or None)
    items = workload.build(
        chosen, args.checks, args.wrong_share, args.timeout_every, args.seed, args.rechecks
    )
    if args.distinct:
        items = workload.distinct(items, args.rechecks)
    first = chosen[0]
    warm = [
        workload.Item(-1 - k, first.id, "right", workload.rel(first.solution), first.solution.read_text())
        for k in range(args.warmup)
    ]
    users = [(f"gpuload{i:03d}", f"gpuload-pass-{i:03d}-{os.getpid()}") for i in range(args.learners)]
    hostile_users = [
        (f"gpuhostile{i}", f"gpuhostile-pass-{i}-{os.getpid()}") for i in range(len(args.hostile_items))
    ]
    timeline: dict[str, float] = {}
    home = Path(tempfile.mkdtemp(prefix="tritonlab-gpuload-"))
    os.chmod(home, 0o755)  # the sandbox's user reads the run folders under it
    cluster = server = None
    learners: list = []
    hostiles: list = []
    hostile_records: list[dict] = []
    stop = threading.Event()
    sampler = Sampler(0.5)
    load: Load | None = None
    records: list[dict] = []
    warmed: list[dict] = []
    warm_children: dict[str, dict | None] = {}  # the server's warm-child counts before and after the load
    failure = ""
    try:
        os.environ.update(args.extra_env)  # the cluster's nodes get them too
        if args.executor == "ray":
            mark = time.monotonic()
            cluster = LocalCluster(1, units=args.ray_units)
            timeline["ray_start_s"] = round(time.monotonic() - mark, 1)
        env = server_env(home, args)
        mark = time.monotonic()
        make_class(env, home, users + hostile_users, deadline)
        timeline["class_made_s"] = round(time.monotonic() - mark, 1)
        server = Server(env, free_port(), home / "server.log")
        timeline["server_start_s"] = round(server.start(timeout=max(1.0, deadline.left())), 1)
        learners = [WebLearner(server.base, name, password, stop) for name, password in users]
        hostiles = [WebLearner(server.base, name, password, stop) for name, password in hostile_users]
        timeline["log_in_s"] = round(log_in(learners + hostiles, deadline), 1)
        mark = time.monotonic()
        warmed = warm_up(learners[0], warm, deadline)
        timeline["warmup_s"] = round(time.monotonic() - mark, 1)
        warm_children["before"] = learners[0].warm_children()
        sampler.server_pid = server.proc.pid if server.proc is not None else None
        sampler.start()
        mark = time.monotonic()
        for learner, item in zip(hostiles, args.hostile_items, strict=True):
            threading.Thread(
                target=hostile_loop, args=(learner, item, deadline, stop, hostile_records), daemon=True
            ).start()
        load = Load(learners, args.rate, deadline, stop)
        load.run(items)
        timeline["load_s"] = round(time.monotonic() - mark, 1)
        warm_children["after"] = learners[0].warm_children()
    except (Exception, KeyboardInterrupt, SystemExit) as exc:  # noqa: BLE001 - reported, then cleaned up
        failure = f"{type(exc).__name__}: {exc}"[:2000]
        tail = server.log.read_text(errors="replace")[-2000:] if server and server.log.exists() else ""
        interrupted = isinstance(exc, KeyboardInterrupt | SystemExit)
        if tail and not interrupted and tail.strip()[-200:] not in failure:
            failure += "\nserver log: " + tail
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up short
        stop.set()
        collected: list[list[dict]] = []
        steps = [sampler.stop]
        steps += [lambda: stop_server(server)] if server is not None else []
        steps += [lambda: collected.append(load.collect())] if load is not None else []
        steps += [learner.close for learner in learners + hostiles]
        steps += [cluster.stop] if cluster is not None else []
        steps += [lambda: remove_home(home)]
        problems = [p for p in (attempt(step) for step in steps) if p]
        records = collected[0] if collected else []
        if problems:
            failure += ("\n" if failure else "") + "clean-up: " + "; ".join(problems)
    timeline["total_s"] = round(time.monotonic() - deadline.started, 1)
    report = {
        "started_unix": started_unix,
        "backend": args.backend,
        "config": {
            "mix": args.mix,
            "exercises": [e.id for e in chosen],
            "executor": args.executor,
            "learners": args.learners,
            "checks": args.checks,
            "rate": args.rate,
            "max_seconds": args.max_seconds,
            "wrong_share": args.wrong_share,
            "timeout_every": args.timeout_every,
            "seed": args.seed,
            "rechecks": args.rechecks,
            "distinct": args.distinct,
            "hostile": [f"{i.file}:{i.exercise}" for i in args.hostile_items],
            "env": args.extra_env,
            "python": sys.version.split()[0],
        },
        "timeline": timeline,
        "server": {
            "pid": server.proc.pid if server is not None and server.proc is not None else None,
            "port": server.port if server is not None else None,
            "home": str(home),
        },
        "warmup": warmed,
        "failure": failure,
        "summary": summarize(records, len(items)),
        "hostile": hostile_summary(list(hostile_records)),
        "utilisation": sampler.summary(),
    }
    report["summary"]["warm_children_per_check"] = warm_per_check(
        warm_children, report["summary"]["verdicts"]
    )
    report["ok"] = report["summary"]["ok"] and not failure
    print(json.dumps({k: v for k, v in report.items() if k != "records"}), flush=True)
    if args.out:
        args.out.write_text(
            json.dumps(report | {"records": records, "hostile_records": hostile_records}, indent=1)
        )
    if args.write and not failure:
        marker = f"gpu-load-{args.mix}-{args.executor}-{args.backend}"
        write_section(args.write, marker, markdown(report))
    if failure and not records:
        print(f"load_gpu.py: the run could not start: {failure}", file=sys.stderr)
        return 2
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
