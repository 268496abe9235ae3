#!/usr/bin/env python3
"""Mutation testing, small and self-contained: break the product on purpose, one way at a time, and check
that the tests notice.

Each mutation replaces one exact piece of source text (it must occur exactly once, so a refactoring that moves
the code makes this script fail loudly instead of testing nothing). The mutated tree is a copy of `src/` in a
temporary folder, put first on PYTHONPATH; the checkout is never modified, and the sandbox's children import
the same copy (runs/limits.py passes the parent's package folder on). For each mutation the relevant fast
tests run; a failing run means the mutant was killed, a green run means it survived.

    python scripts/mutate.py                 # every mutation (about 10 minutes on 2 cores)
    python scripts/mutate.py --ci            # the bounded sample `make test` runs, fails below --min-score
    python scripts/mutate.py --only lifo-queue --only cap-removed
    python scripts/mutate.py --list

Surviving mutants that are accepted are listed in docs/testing.md with the reason.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
G = "tests/test_guarantees.py"


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # under src/tritonlab/
    old: str
    new: str
    tests: tuple[str, ...]  # pytest arguments: files and -k expressions
    ci: bool = False  # part of the bounded sample that `make test` runs
    what: str = ""


def k(file: str, expr: str) -> tuple[str, ...]:
    return (file, "-k", expr)


MUTATIONS: tuple[Mutation, ...] = (
    # ---- the eight of issue 14's "done when" ----
    Mutation(
        "token-bypass",
        "web/security.py",
        'by_header = bearer.startswith("Bearer ") and hmac.compare_digest(bearer[7:].strip(), self.token)',
        'by_header = bearer.startswith("Bearer ")',
        k(G, "wrong_token"),
        ci=True,
        what="any Bearer token is accepted",
    ),
    Mutation(
        "cookie-bypass",
        "web/security.py",
        "by_cookie = hmac.compare_digest(self._cookie(headers), self.cookie_value)",
        "by_cookie = bool(self._cookie(headers))",
        k(G, "wrong_token"),
        ci=True,
        what="any cookie value is accepted",
    ),
    Mutation(
        "synchronous-off",
        "store/progress.py",
        'db.execute("PRAGMA synchronous=FULL")',
        'db.execute("PRAGMA synchronous=OFF")',
        k(G, "store_connection"),
        ci=True,
        what="commits are not flushed to disk",
    ),
    Mutation(
        "lifo-queue",
        "service/gate.py",
        "self._queue.append(ticket)",
        "self._queue.insert(0, ticket)",
        k(G, "first_come"),
        ci=True,
        what="the run queue serves the newest waiter first",
    ),
    Mutation(
        "cap-removed",
        "web/jobs.py",
        "if self.active >= self.max_active:",
        "if False:",
        k(G, "max_active"),
        ci=True,
        what="no limit on runs in flight",
    ),
    Mutation(
        "loopback-refusal-removed",
        "cli/serve.py",
        "if not missing or not shared or allow_unhardened:",
        "if True:",
        k(G, "shared_address"),
        ci=True,
        what="a shared address is served without the hardened sandbox",
    ),
    Mutation(
        "wall-clock-kill-removed",
        "runs/collect.py",
        "if time.monotonic() > deadline and not timed_out:",
        "if False:",
        ("--timeout=25", *k(G, "wall_clock")),
        ci=True,
        what="the wall-clock limit never kills a run",
    ),
    Mutation(
        "guard-off-by-one",
        "grading/guards.py",
        "tail = bits[: self.guard], bits[self.guard + self.numel :]",
        "tail = bits[: self.guard], bits[self.guard + self.numel + 1 :]",
        k(G, "past_either_end"),
        ci=True,
        what="a write one element past the end goes unnoticed",
    ),
    # ---- web/security.py ----
    Mutation(
        "query-token-any",
        "web/security.py",
        'if hmac.compare_digest(query["token"], self.token):',
        "if True:",
        k(G, "wrong_token"),
        ci=True,
        what="any ?token= is exchanged for a session cookie",
    ),
    Mutation(
        "origin-check-removed",
        "web/security.py",
        "if method in UNSAFE_METHODS and not by_header and not self._same_origin(headers, host):",
        "if False:",
        k("tests/test_web_api.py", "host_and_origin"),
        what="cross-site POSTs with the cookie are accepted",
    ),
    Mutation(
        "host-check-removed",
        "web/security.py",
        "if (host and name is None) or (self.allowed is not None and name not in self.allowed):",
        "if False:",
        k("tests/test_web_api.py", "host_and_origin"),
        what="DNS rebinding: any Host header is accepted",
    ),
    Mutation(
        "same-origin-any-port",
        "web/security.py",
        'return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()',
        'return parts.scheme in ("http", "https") and parts.hostname == host_name(host)',
        k("tests/test_web_api.py", "host_and_origin"),
        what="another port on the same host counts as the same origin",
    ),
    Mutation(
        "cookie-name-shared",
        "web/security.py",
        'return "tritonlab_" + hashlib.sha256(token.encode()).hexdigest()[:10]',
        'return "tritonlab_session"',
        k(G, "wrong_token"),
        ci=True,
        what="two servers on one machine share a cookie name",
    ),
    # ---- store/progress.py ----
    Mutation(
        "journal-not-wal",
        "store/progress.py",
        'db.execute("PRAGMA journal_mode=WAL")',
        'db.execute("PRAGMA journal_mode=DELETE")',
        k(G, "store_connection"),
        ci=True,
        what="readers block the writer (no WAL)",
    ),
    Mutation(
        "passed-inverted",
        "store/progress.py",
        'int(bool(verdict.get("passed"))),',
        'int(not verdict.get("passed")),',
        ("tests/test_progress.py",),
        ci=True,
        what="a failed check is recorded as passed",
    ),
    # ---- store/workspace.py ----
    Mutation(
        "write-through-symlink",
        "store/workspace.py",
        "if path.is_symlink():\n            raise WorkspaceError",
        "if False:\n            raise WorkspaceError",
        ("tests/test_workspace.py",),
        ci=True,
        what="a save follows a symlink planted in the workspace",
    ),
    Mutation(
        "conflict-ignored",
        "store/workspace.py",
        "if not force:\n                    raise ConflictError",
        "if False:\n                    raise ConflictError",
        ("tests/test_workspace.py",),
        ci=True,
        what="a save silently overwrites a file changed on disk",
    ),
    Mutation(
        "no-fsync",
        "store/workspace.py",
        "os.fsync(f.fileno())",
        "pass",
        ("tests/test_workspace.py",),
        what="a save is not flushed before the rename",
    ),
    Mutation(
        "size-cap-removed",
        "store/workspace.py",
        'if len(text.encode("utf-8")) > MAX_SOURCE_BYTES:',
        "if False:",
        ("tests/test_workspace.py",),
        ci=True,
        what="oversized code is saved",
    ),
    # ---- runs/collect.py and runs/zygote.py: limits and kills ----
    Mutation(
        "output-cap-removed",
        "runs/collect.py",
        "if len(data) > room:",
        "if False:",
        k("tests/test_sandbox.py", "huge_output"),
        what="a run's output is not capped",
    ),
    Mutation(
        "cpu-limit-removed",
        "runs/zygote.py",
        "resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))",
        "pass",
        k(G, "cpu_limit"),
        what="a busy loop is not stopped by the CPU-time limit",
    ),
    Mutation(
        "kill-tree-parent-only",
        "runs/zygote.py",
        "for p in [pid, *targets]:",
        "for p in [pid]:",
        k("tests/test_sandbox.py", "setsid"),
        what="Stop leaves the run's grandchildren alive (those in another session too)",
    ),
    Mutation(
        "dumpable",
        "runs/zygote.py",
        "jail.not_dumpable()  # other runs",
        "pass  # other runs",
        k(G, "dumpable"),
        ci=True,
        what="runs can be ptraced and dump core",
    ),
    Mutation(
        "dumpable-hardened",
        "runs/jail.py",
        "    no_new_privileges()\n    not_dumpable()\n",
        "    no_new_privileges()\n",
        k(G, "hardened_runs"),
        what="a hardened run stays dumpable after writing its uid map",
    ),
    # ---- grading: guards and judging ----
    Mutation(
        "guard-front-off-by-one",
        "grading/guards.py",
        "head, tail = bits[: self.guard],",
        "head, tail = bits[: self.guard - 1],",
        k(G, "past_either_end"),
        ci=True,
        what="a write one element before the start goes unnoticed",
    ),
    Mutation(
        "oob-read-by-guard-value-removed",
        "grading/contracts/_values.py",
        "oob = np.flatnonzero(bits == guard) if guard is not None else np.array([], int)",
        "oob = np.array([], int)",
        k(G, "input_guard"),
        ci=True,
        what="a value loaded from the input's guard is not diagnosed as an out-of-bounds read",
    ),
    Mutation(
        "unwritten-not-detected",
        "grading/contracts/_values.py",
        'np.flatnonzero(bits == poison) if poison is not None and meta.get("guarded") else np.array([], int)',
        "np.array([], int)",
        ("tests/test_contracts.py",),
        what="unwritten (poisoned) output elements are not diagnosed",
    ),
    # ---- queue, caps, streaming, serving ----
    Mutation(
        "gate-admits-one-more",
        "service/gate.py",
        "while self._queue[0] is not ticket or self._active >= self.size:",
        "while self._queue[0] is not ticket or self._active > self.size:",
        k(G, "exactly_its_size"),
        ci=True,
        what="the gate lets one run too many through",
    ),
    Mutation(
        "viz-cap-removed",
        "web/viz_api.py",
        "seed = body.seed if body is not None and body.seed is not None else 0\n    slots = _viz_slots(request)\n"
        "    if not slots.acquire(blocking=False):",
        "seed = body.seed if body is not None and body.seed is not None else 0\n    slots = _viz_slots(request)\n"
        "    if not slots.acquire(blocking=True):",
        k(G, "four_pictures"),
        what="more than four pictures are drawn at once",
    ),
    Mutation(
        "last-event-id-ignored",
        "web/runs_api.py",
        "start = int(last) + 1 if last.isdigit() else 0",
        "start = 0",
        k(G, "last_event_id"),
        ci=True,
        what="a reconnecting stream replays every event",
    ),
    Mutation(
        "port-hint-wrong",
        "cli/serve.py",
        't("serve.try_port", lang(), port=port + 1)',
        't("serve.try_port", lang(), port=port)',
        k(G, "busy_port"),
        ci=True,
        what="'port in use' suggests the same port",
    ),
    Mutation(
        "ctrl-c-ignored",
        "cli/serve.py",
        "super().handle_exit(sig, frame)  # type: ignore[arg-type]",
        "pass",
        ("--timeout=120", *k(G, "stopped_server and ctrl")),
        what="Ctrl+C does not stop the server",
    ),
    Mutation(
        "sigterm-skips-release",
        "cli/serve.py",
        "        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))",
        "        pass",
        ("--timeout=120", *k(G, "stopped_server and sigterm")),
        what="SIGTERM ends the server before it releases the sandbox's mounts",
    ),
    Mutation(
        "stray-in-neighbour-slack",
        "grading/where.py",
        "        accounted[lanes_here[(rel % esize == 0) & valid[index]]] = True",
        "        pass  # no lane counts as another tensor's element",
        k("tests/test_where.py", "slack_around"),
        what="a correct load is blamed as stray when another copy's watched slack covers it",
    ),
    Mutation(
        "discarded-read-passes",
        "grading/check/judge.py",
        "        return reads_outside(case, entry)",
        "        return []",
        k("tests/test_wrong_solutions.py", "unmasked_load"),
        what="a load past the end whose values a masked store throws away passes the case",
        ci=True,
    ),
    Mutation(
        "first-exit-undoes-the-bind",
        "runs/runfolder.py",
        "            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)\n",
        "            pass\n",
        k("tests/test_guarantees.py", "one_tritonlab_process_exiting"),
        what="the first tritonlab process to exit undoes the runs folder's bind under the others' sandboxes",
    ),
)


def pytest_command(mutation: Mutation) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-x",
        "-p",
        "no:cacheprovider",
        "--no-header",
        *mutation.tests,
    ]


def apply(src_copy: Path, mutation: Mutation) -> Path:
    target = src_copy / "tritonlab" / mutation.file
    text = target.read_text()
    count = text.count(mutation.old)
    if count != 1:
        raise SystemExit(
            f"{mutation.name}: the text to mutate occurs {count} times in {mutation.file}, not once"
        )
    target.write_text(text.replace(mutation.old, mutation.new))
    return target


def run_one(mutation: Mutation, src_copy: Path, timeout: float) -> tuple[str, float, str]:
    """('killed' | 'survived' | 'timeout', seconds, last lines of output)."""
    original = (src_copy / "tritonlab" / mutation.file).read_text()
    apply(src_copy, mutation)
    env = dict(os.environ, PYTHONPATH=str(src_copy), PYTHONDONTWRITEBYTECODE="1")
    started = time.monotonic()
    try:
        proc = subprocess.run(
            pytest_command(mutation), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
        )
        outcome = "survived" if proc.returncode == 0 else "killed"
        if proc.returncode == 5:
            raise SystemExit(f"{mutation.name}: its test selection {mutation.tests} collected no tests")
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    except subprocess.TimeoutExpired:
        outcome, tail = "timeout", [f"no result within {timeout:.0f} s (counted as killed)"]
    finally:
        (src_copy / "tritonlab" / mutation.file).write_text(original)
    return outcome, time.monotonic() - started, "\n".join(tail)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ci", action="store_true", help="only the bounded sample marked ci=True")
    parser.add_argument("--only", action="append", default=[], help="a mutation's name (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--min-score", type=float, default=0.0, help="fail below this kill rate (0..1)")
    parser.add_argument("--timeout", type=float, default=240, help="seconds per mutant")
    args = parser.parse_args()

    chosen = [m for m in MUTATIONS if (not args.ci or m.ci) and (not args.only or m.name in args.only)]
    if args.list:
        for m in chosen:
            print(f"{m.name:34} {'ci ' if m.ci else '   '}{m.file:30} {m.what}")
        return 0
    unknown = set(args.only) - {m.name for m in MUTATIONS}
    if unknown:
        raise SystemExit(f"unknown mutation(s): {', '.join(sorted(unknown))}")

    with tempfile.TemporaryDirectory(prefix="tritonlab-mutants-") as tmp:
        src_copy = Path(tmp) / "src"
        shutil.copytree(ROOT / "src", src_copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for m in chosen:  # every mutation must still match the code before anything runs
            apply(src_copy, m)
            shutil.copy2(ROOT / "src" / "tritonlab" / m.file, src_copy / "tritonlab" / m.file)
        probe = subprocess.run(
            [sys.executable, "-c", "import tritonlab; print(tritonlab.__file__)"],
            env=dict(os.environ, PYTHONPATH=str(src_copy)),
            capture_output=True,
            text=True,
        )
        if not probe.stdout.startswith(str(src_copy)):
            raise SystemExit(f"the mutated copy is not the one imported: {probe.stdout}{probe.stderr}")

        results = []
        started = time.monotonic()
        for m in chosen:
            outcome, seconds, tail = run_one(m, src_copy, args.timeout)
            results.append((m, outcome))
            print(f"{outcome:8} {seconds:6.1f}s  {m.name}: {m.what}", flush=True)
            if outcome == "survived":
                print("         " + tail.replace("\n", "\n         "), flush=True)

    killed = sum(1 for _, o in results if o != "survived")
    score = killed / len(results) if results else 1.0
    print(
        f"mutation score: {killed}/{len(results)} killed ({score:.0%}) in {time.monotonic() - started:.0f} s"
    )
    survivors = [m.name for m, o in results if o == "survived"]
    if survivors:
        print("survived: " + ", ".join(survivors) + " (accepted ones are listed in docs/testing.md)")
    if score < args.min_score:
        print(f"FAILED: the kill rate {score:.0%} is below the required {args.min_score:.0%}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
