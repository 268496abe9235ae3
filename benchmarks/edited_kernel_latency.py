"""How long the first check of an EDITED kernel takes, and where the time goes (issue 40).

A learner's next check is almost always of code the GPU has never compiled. This takes each exercise's course
solution, makes a harmless edit inside every `@triton.jit` function (a comment with a fresh number, which
changes the source Triton hashes, so no compile cache can answer), and runs `tritonlab check EXERCISE --file F
--json` as a learner would, through the check daemon (warmed first on the unedited solution). It records the
whole command's wall time, the verdict, and the verdict's own per-phase timings (queue, cases, check run,
replay, trusted compile, speed) with the split of the compiles (`PHASES`: check child, replay child, the
replay's wait for the precompile, kernels precompiled and kernels the replay still compiled).

    python benchmarks/edited_kernel_latency.py --out DIR [--backend gpu] [--repeats 3] [EXERCISE ...]

Writes DIR/edited-kernel.json and prints a table last. Runs on the interpreter too (`--backend interpreter`),
where the compile is not the cost.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EXERCISES = ("vector-copy", "softmax", "matmul")
# the verdict's timings kept per row: the phases, then the split of the two children that compile (the check
# child's and the replay child's own seconds, the replay's wait for the precompile beside the check child, what
# that precompile compiled and what the replay still compiled itself: grading/check/precompile.py)
PHASES = (
    "queue_wait_s", "cases_s", "check_run_s", "replay_s", "compile_s", "judge_s", "speed_s", "total_s",
    "check_child_s", "check_child_first_s", "replay_run_s", "replay_child_s", "replay_child_first_s",
    "precompile_wait_s", "precompile_s", "precompiled", "check_precompile_s", "check_precompiled",
    "replay_ahead_s", "replay_compiled",
)  # fmt: skip


def edit(source: str, tag: str) -> str:
    """`source` with a comment line `# edit TAG` as the first line of every @triton.jit function's body."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    inserts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            first = node.body[0]
            indent = lines[first.lineno - 1][: first.col_offset]
            inserts.append((first.lineno - 1, f"{indent}# edit {tag}\n"))
    if not inserts:
        raise SystemExit("no @triton.jit function found to edit")
    for index, text in sorted(inserts, reverse=True):
        lines.insert(index, text)
    return "".join(lines)


def solution(exercise: str) -> Path:
    found = sorted(ROOT.glob(f"course/*/exercises/{exercise}/solution.py"))
    if not found:
        raise SystemExit(f"no course exercise {exercise!r}")
    return found[0]


def check(exercise: str, file: Path, backend: str, env: dict) -> dict:
    began = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tritonlab",
            "check",
            exercise,
            "--file",
            str(file),
            "--backend",
            backend,
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    wall = time.monotonic() - began
    try:
        verdict = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        verdict = {"error": (done.stdout + done.stderr)[-2000:]}
    return {"wall_s": round(wall, 3), "exit": done.returncode, "verdict": verdict}


def summary(verdict: dict) -> dict:
    timings = verdict.get("timings") or {}
    return {k: round(float(timings[k]), 3) for k in PHASES if isinstance(timings.get(k), int | float)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exercises", nargs="*", default=list(DEFAULT_EXERCISES))
    ap.add_argument("--out", type=Path, required=True, help="folder for edited-kernel.json")
    ap.add_argument("--backend", default="gpu")
    ap.add_argument("--repeats", type=int, default=3, help="edited checks per exercise (each a new edit)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="edited-"))
    env = os.environ | {"TRITONLAB_HOME": str(work / "home")}
    rows = []
    for exercise in args.exercises:
        original = solution(exercise)
        warm = check(exercise, original, args.backend, env)  # the daemon, its worker and the cases: warm
        rows.append({"exercise": exercise, "edit": None, **warm, "phases": summary(warm["verdict"])})
        for _ in range(args.repeats):
            tag = uuid.uuid4().hex[:12]
            file = work / exercise / f"{tag}.py"
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(edit(original.read_text(), tag))
            got = check(exercise, file, args.backend, env)
            rows.append({"exercise": exercise, "edit": tag, **got, "phases": summary(got["verdict"])})
            (args.out / "edited-kernel.json").write_text(json.dumps({"rows": rows}, indent=1))
    subprocess.run([sys.executable, "-m", "tritonlab", "daemon", "stop"], env=env, capture_output=True)
    print(f"{'exercise':<14} {'edit':<13} {'passed':<7} {'wall s':>7}  phases")
    for r in rows:
        passed = r["verdict"].get("passed")
        print(
            f"{r['exercise']:<14} {r['edit'] or '(warm-up)':<13} {passed!s:<7} {r['wall_s']:>7.2f}  {r['phases']}"
        )
    for exercise in args.exercises:
        walls = [r["wall_s"] for r in rows if r["exercise"] == exercise and r["edit"]]
        if walls:
            print(f"{exercise}: median of {len(walls)} edited checks {statistics.median(walls):.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
