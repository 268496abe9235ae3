"""scripts/ and benchmarks/ hold what people run: every file is listed in its folder's README.md, and every entry
point answers `--help` with its usage (exit 0), without importing torch or triton."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("scripts", "benchmarks")

# Runs a Python entry point as `python FILE --help` would (its folder first on sys.path, run as __main__), then
# reports which heavy modules the help imported.
HELP = """
import runpy, sys
path = sys.argv[1]
sys.argv = [path, "--help"]
sys.path[0] = path.rsplit("/", 1)[0]
try:
    runpy.run_path(path, run_name="__main__")
    code = 0
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
print("heavy:" + ",".join(m for m in ("torch", "triton") if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


def listed(folder: str) -> dict[str, str]:
    """file -> "entry" or "module", from the tables of FOLDER/README.md (the section decides which)."""
    text = (ROOT / folder / "README.md").read_text(encoding="utf-8")
    found: dict[str, str] = {}
    kind = None
    for line in text.splitlines():
        if line.startswith("## "):
            kind = (
                "entry"
                if line.startswith("## Entry points")
                else "module"
                if line.startswith("## Modules")
                else None
            )
            continue
        m = re.match(r"^\|\s*`([^`]+)`\s*\|", line)
        if m and kind:
            assert m.group(1) not in found, f"{folder}/README.md lists {m.group(1)} twice"
            found[m.group(1)] = kind
    return found


def present(folder: str) -> set[str]:
    base = ROOT / folder
    return {
        str(p.relative_to(base))
        for p in base.rglob("*")
        if p.is_file() and p.name != "README.md" and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_readme_lists_every_file_of_its_folder(folder: str) -> None:
    files, rows = present(folder), listed(folder)
    assert files, folder
    assert not files - set(rows), f"{folder}/README.md does not list {sorted(files - set(rows))}"
    assert not set(rows) - files, (
        f"{folder}/README.md lists files that are not there: {sorted(set(rows) - files)}"
    )
    for name, kind in rows.items():
        if kind == "entry":
            assert name.endswith((".py", ".sh")), name


def _help(folder: str, name: str) -> tuple[str, subprocess.CompletedProcess]:
    path = ROOT / folder / name
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argv = ["bash", str(path), "--help"] if name.endswith(".sh") else [sys.executable, "-c", HELP, str(path)]
    return f"{folder}/{name}", subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL
    )


def test_every_entry_point_prints_its_usage_on_help() -> None:
    """Each maintained entry point of scripts/ and benchmarks/: `--help` exits 0, prints a usage line, changes
    nothing, and imports neither torch nor triton (so it is fast, and safe on any machine)."""
    jobs = [(folder, name) for folder in FOLDERS for name, kind in listed(folder).items() if kind == "entry"]
    assert len(jobs) >= 25
    generated = [ROOT / "docs" / "cli.md", ROOT / "docs" / "outcomes.md", ROOT / "docs" / "benchmarks.md"]
    stamps = [p.stat().st_mtime_ns for p in generated]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda job: _help(*job), jobs))
    problems = []
    for name, done in results:
        out = done.stdout + done.stderr
        if done.returncode != 0 or "usage" not in out.lower():
            problems.append(f"{name}: exit {done.returncode}, output {out[-600:]!r}")
        heavy = re.search(r"^heavy:(.*)$", done.stderr, re.M)
        if heavy and heavy.group(1):
            problems.append(f"{name}: --help imported {heavy.group(1)}")
    assert not problems, "\n".join(problems)
    assert [p.stat().st_mtime_ns for p in generated] == stamps, "a script's --help wrote a generated page"


def test_make_run_takes_a_port() -> None:
    """`make run PORT=8123` serves on that port (issue 36: it could not choose one); 8000 without it."""
    import shutil

    if shutil.which("make") is None:
        pytest.skip("needs make")
    for extra, port in ((["PORT=8123"], "8123"), ([], "8000")):
        shown = subprocess.run(
            ["make", "-n", "run", *extra], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert shown.returncode == 0, shown.stderr
        assert re.search(rf"tritonlab serve --port {port}\b", shown.stdout), shown.stdout[-2000:]


def test_pyspy_split_puts_each_sample_in_its_run_and_compile_stage() -> None:
    """benchmarks/pyspy_split.py on py-spy's raw lines: the stage a stack is in, by run kind; stacks outside a
    run are left out, and the warm-up is apart."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import pyspy_split
    finally:
        sys.path.pop(0)
    job = 'process 1:"python -m tritonlab.runs.zygote";thread (0x1);run_job (tritonlab/runs/zygote.py:233);'
    lines = [
        job
        + "run_check (tritonlab/grading/harness.py:1);compile_module_from_src (triton/runtime/build.py:93) 7",
        job
        + "run_check (h.py:1);compile (triton/compiler/compiler.py:324);make_cubin (nvidia/compiler.py:494) 5",
        job + "run_check (h.py:1);compile (triton/compiler/compiler.py:300) 3",
        job + "run_replay (child.py:1);compile_variants (replay/precompile.py:9) 2",
        job + "run_replay (child.py:1);run_events (replayer.py:5) 1",
        'process 1:"x";thread (0x2);bound_child (tritonlab/runs/pool.py:1);init_device (tritonlab/runs/pool.py:113) 4',
        'process 2:"python -m tritonlab serve";thread (0x3);handle (web/app.py:1) 9',
        "not a stack line",
    ]
    found = pyspy_split.split(lines)
    assert dict(found["check"]) == {
        "host launcher (C compiler)": 7, "ptxas": 5, "other compile stages": 3, "all": 15
    }  # fmt: skip
    assert dict(found["replay"]) == {"compiles ahead (replay)": 2, "rest": 1, "all": 3}
    assert dict(found["warm-up (CUDA context)"]) == {"all": 4}
    assert set(found) == {"check", "replay", "warm-up (CUDA context)"}


def test_cuda_contexts_plumbing_on_the_cpu(tmp_path: Path) -> None:
    """benchmarks/cuda_contexts.py --dry-run: children forked from several threads at once, with idle holders
    beside them, and with attackers looping beside them (counted), each report every phase and are reaped (no pipe
    kept open by another thread's child, which hung it once); the report names each setting. Without a CUDA
    driver, --raw ends at once with the reason."""
    out = tmp_path / "contexts.json"
    script = str(ROOT / "benchmarks" / "cuda_contexts.py")
    done = subprocess.run(
        [sys.executable, script, "--dry-run", "--concurrency", "1,3", "--idle", "0,2", "--attackers", "0,1",
         "--seconds", "0.5", "--alloc-mib", "1", "--env", "TRITONLAB_PROBE=1", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["env"] == {"TRITONLAB_PROBE": "1"}
    rows = report["rows"]
    settings = [(r["attackers"], r["concurrency"], r["idle_contexts"]) for r in rows]
    assert settings == [(a, c, i) for a in (0, 1) for i in (0, 2) for c in (1, 3)]
    for row in rows:
        # the attacker's loop was counted while the setting ran (a CPU stand-in: 100 a second at most)
        assert (row["attacker_contexts_per_s"] or 0) > (0 if row["attackers"] else -1), row
        assert row["attackers"] or row["attacker_contexts_per_s"] is None, row
        assert row["children"] >= row["concurrency"] and not row["errors"], row
        assert all(row[k]["median"] >= 0 for k in ("start", "context", "alloc", "exit", "whole")), row
        assert row["wall_s"] < 30, row
    if not Path("/proc/driver/nvidia").exists():
        raw = subprocess.run(
            [sys.executable, script, "--raw", "--concurrency", "1", "--idle", "0", "--seconds", "0.5"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert raw.returncode == 1 and "cannot use cuda" in raw.stderr, (raw.returncode, raw.stderr[-2000:])
