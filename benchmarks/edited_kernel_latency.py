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

`--save-first` measures the compile ahead of a save instead (service/ahead.py), in-process through one
`Service` as the web server calls it: for each edit, the text is saved as the editor saves it and checked
twice over, on two fresh edits: once with Check pressed at once (the compile ahead stopped by the check),
once after the compile ahead ended (a learner who read for a few seconds). It writes
DIR/edited-kernel-saved.json with, per row, the seconds until the verdict was shown (`shown_s`) and the
compile ahead's outcome.
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
    "precompile_first_wait_s", "precompile_wait_s", "precompile_s", "precompiled", "precompile_copied",
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


def save_first(exercises: list[str], backend: str, repeats: int, out: Path) -> list[dict]:
    """See the module docstring: each edit saved, then checked at once or after its compile ahead ended."""
    os.environ["TRITONLAB_HOME"] = tempfile.mkdtemp(prefix="edited-saved-")
    from tritonlab.service import Service

    service = Service(workspace_dir=Path(os.environ["TRITONLAB_HOME"]) / "ws", backend=backend, lang="en")
    rows: list[dict] = []
    try:
        for name in exercises:
            exercise = service.exercise(name)
            original = solution(name).read_text()
            for k in range(repeats + 1):
                for mode in ("at once", "after the compile ahead") if k else ("warm-up",):
                    text = edit(original, uuid.uuid4().hex[:12]) if k else original
                    _, version = service.read_code(exercise)
                    service.save_code(exercise, text, version, force=True)
                    ahead = None
                    if mode == "after the compile ahead":
                        ahead = service.ahead.wait(service.cache_name, name, 120)
                    shown: list[float] = []
                    began = time.monotonic()
                    verdict = service.check(
                        exercise, text=text, speed=False,
                        on_verdict=lambda v, s=shown, b=began: s.append(time.monotonic() - b),
                    )  # fmt: skip
                    wall = time.monotonic() - began
                    if mode == "at once":
                        ahead = service.ahead.wait(service.cache_name, name, 30)
                    rows.append({
                        "exercise": name, "mode": mode, "passed": verdict.passed,
                        "shown_s": round(shown[0] if shown else wall, 3), "wall_s": round(wall, 3),
                        "ahead": ahead, "phases": summary({"timings": verdict.timings}),
                    })  # fmt: skip
                    (out / "edited-kernel-saved.json").write_text(json.dumps({"rows": rows}, indent=1))
    finally:
        service.close()
    print(f"{'exercise':<14} {'mode':<24} {'passed':<7} {'shown s':>8}  compile ahead")
    for r in rows:
        ahead = (r["ahead"] or {}).get("status", "-")
        print(f"{r['exercise']:<14} {r['mode']:<24} {r['passed']!s:<7} {r['shown_s']:>8.2f}  {ahead}")
    for name in exercises:
        for mode in ("at once", "after the compile ahead"):
            shown = [r["shown_s"] for r in rows if r["exercise"] == name and r["mode"] == mode]
            if shown:
                print(f"{name}: {mode}: median of {len(shown)} {statistics.median(shown):.2f} s")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exercises", nargs="*", default=list(DEFAULT_EXERCISES))
    ap.add_argument("--out", type=Path, required=True, help="folder for edited-kernel.json")
    ap.add_argument("--backend", default="gpu")
    ap.add_argument("--repeats", type=int, default=3, help="edited checks per exercise (each a new edit)")
    ap.add_argument("--save-first", action="store_true", help="save each edit first (the compile ahead)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.save_first:
        rows = save_first(args.exercises, args.backend, args.repeats, args.out)
        return 0 if rows and all(r["passed"] for r in rows) else 1
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
