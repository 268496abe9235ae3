#!/usr/bin/env python3
"""The records of GPU runs in docs/gpu-runs/: one folder per run, named by date, GPU and commit, one README each.

    python scripts/gpu_runs.py check                    # every run folder well formed, every citation resolves
    python scripts/gpu_runs.py name [--gpu "NVIDIA H200"]  # the folder a run made here now would get

A run folder is `<date>-<gpu>-<commit>` (`2026-12-03-h200-4ac7c77`): the UTC date the run started, the GPU's
short name (`tritonlab.perf.bench.gpu_slug`: "NVIDIA H200" -> "h200") and the first 7 hex digits of the commit
whose tree ran. Its README.md starts with `# <GPU> run <date> (<commit>)`, then a table of `date`, `GPU`,
`software` (Triton, torch, Python), `commit` and `command`, and ends with a `## Files` table naming every file
of the folder. Product text cites a run the same way, "H200 run 2026-12-03 (4ac7c77)", or by its folder path
(`docs/gpu-runs/2026-12-03-h200-4ac7c77/...`); `check` fails when a citation names no recorded run.

`scripts/gpu_verify.py` (`make gpu-verify`) and `scripts/bench_gpu.py` write their runs in this form.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from tritonlab.perf.bench import gpu_slug  # noqa: E402  (stdlib only: this script starts without NumPy)

RUNS = ROOT / "docs" / "gpu-runs"
INDEX = RUNS / "README.md"
#: `<date>-<gpu>-<commit>`
FOLDER = re.compile(r"^(\d{4}-\d{2}-\d{2})-([a-z0-9]+(?:-[a-z0-9]+)*)-([0-9a-f]{7})$")
#: "H200 run 2026-12-03 (4ac7c77)" (the GPU as its short name prints, e.g. "H200", "A100-SXM4-80GB"); also
#: "H200 runs 2026-12-02 (accb35e) and 2026-12-02 (907ab44)": each dated commit after "<GPU> run(s)" on a line
CITATION = re.compile(
    r"\b([A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*)\s+runs?\s+(?=\d{4}-\d{2}-\d{2}\s+\([0-9a-f]{7})"
)
DATED = re.compile(r"\b(\d{4}-\d{2}-\d{2})\s+\(([0-9a-f]{7})[0-9a-f]*\)")
#: a path into the records: `docs/gpu-runs/<folder>[/<file>]` or `gpu-runs/<folder>...`
PATH_REF = re.compile(r"gpu-runs/([^\s`'\"()\[\]<>{}|,;]+)")
FIELDS = ("date", "GPU", "software", "commit", "command")
TEXT_SUFFIXES = {
    ".md",
    ".py",
    ".toml",
    ".txt",
    ".json",
    ".jsonl",
    ".log",
    ".sh",
    ".html",
    ".js",
    ".css",
    ".ipynb",
}


def gpu_label(name: str) -> str:
    """How a citation names the GPU: "NVIDIA H200" -> "H200"."""
    return gpu_slug(name).upper()


def folder_name(date: str, gpu: str, commit: str) -> str:
    """`2026-12-03`, `NVIDIA H200`, `4ac7c77...` -> `2026-12-03-h200-4ac7c77`."""
    commit = (commit or "").strip()[:7].lower()
    if not re.fullmatch(r"[0-9a-f]{7}", commit):
        raise ValueError(f"a run folder needs the commit's hex id, got {commit!r} (set TRITONLAB_COMMIT)")
    return f"{date[:10]}-{gpu_slug(gpu)}-{commit}"


def citation(date: str, gpu: str, commit: str) -> str:
    return f"{gpu_label(gpu)} run {date[:10]} ({commit[:7]})"


def current_commit() -> str:
    """TRITONLAB_COMMIT (a tree copied to a GPU machine may carry no .git), else `git rev-parse --short HEAD`."""
    import os

    named = os.environ.get("TRITONLAB_COMMIT", "").strip()
    if named:
        return named
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True, timeout=10, cwd=ROOT
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def todays_folder(gpu: str, runs: Path = RUNS) -> Path:
    """The folder of a run of this commit on `gpu` today (several measuring scripts of one day share it): where
    the GPU benchmark scripts write when no --out is given. Its README is still to be written."""
    import datetime as dt

    return runs / folder_name(dt.datetime.now(dt.UTC).date().isoformat(), gpu, current_commit())


def first_gpu() -> str:
    """nvidia-smi's name of this machine's first GPU ("" without one)."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = done.stdout.strip().splitlines() if done.returncode == 0 else []
    return lines[0].strip() if lines else ""


def readme(title: str, fields: dict[str, str], body: str, files: Iterable[tuple[str, str]]) -> str:
    """A run folder's README in the one form `check` reads."""
    missing = [f for f in FIELDS if not fields.get(f)]
    if missing:
        raise ValueError(f"a run README needs {', '.join(missing)}")
    lines = [f"# {title}", "", "| | |", "|---|---|"]
    lines += [f"| {key} | {fields[key]} |" for key in FIELDS]
    lines += ["", body.strip(), "", "## Files", "", "| file | what |", "|---|---|"]
    lines += [f"| `{name}` | {what} |" for name, what in files]
    return "\n".join(lines) + "\n"


# ---- checking the records ----------------------------------------------------------------------------------


def _header(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in text.splitlines()[1:12]:
        m = re.match(r"^\|\s*([A-Za-z]+)\s*\|\s*(.+?)\s*\|$", line)
        if m and m.group(1) in FIELDS:
            found[m.group(1)] = m.group(2)
    return found


def _listed_files(text: str) -> set[str] | None:
    if "\n## Files\n" not in text:
        return None
    section = text.split("\n## Files\n", 1)[1].split("\n## ", 1)[0]
    return {m.group(1) for m in re.finditer(r"^\|\s*`([^`]+)`\s*\|", section, re.M)}


def folder_problems(folder: Path) -> list[str]:
    """What is wrong with one run folder (an empty list: nothing)."""
    name = folder.name
    m = FOLDER.match(name)
    if not m:
        return [f"{name}: not named <date>-<gpu>-<commit> (e.g. 2026-12-03-h200-4ac7c77)"]
    date, gpu, commit = m.groups()
    readme_path = folder / "README.md"
    if not readme_path.is_file():
        return [f"{name}: no README.md"]
    text = readme_path.read_text(encoding="utf-8")
    out = []
    first = text.splitlines()[0] if text else ""
    if not first.startswith(f"# {gpu.upper()} run {date} ({commit})"):
        out.append(f"{name}/README.md: the title must start with '# {gpu.upper()} run {date} ({commit})'")
    header = _header(text)
    for key in FIELDS:
        if not header.get(key):
            out.append(f"{name}/README.md: the header table has no '{key}' row")
    if header.get("date") and not header["date"].startswith(date):
        out.append(f"{name}/README.md: date {header['date']!r} is not the folder's {date}")
    if header.get("commit") and commit not in header["commit"]:
        out.append(f"{name}/README.md: commit {header['commit']!r} is not the folder's {commit}")
    listed = _listed_files(text)
    if listed is None:
        return out + [f"{name}/README.md: no '## Files' section"]
    present = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != "README.md"}
    for f in sorted(present - listed):
        out.append(f"{name}/README.md: {f} is in the folder but not in its '## Files' table")
    for f in sorted(listed - present):
        out.append(f"{name}/README.md: lists {f}, which is not in the folder")
    return out


def run_folders(runs: Path = RUNS) -> list[Path]:
    return sorted(p for p in runs.iterdir() if p.is_dir())


def index_problems(runs: Path = RUNS) -> list[str]:
    """docs/gpu-runs/README.md's "## The runs" links every run folder once; nothing else is at the top of
    docs/gpu-runs."""
    index = runs / "README.md"
    if not index.is_file():
        return [f"{index}: missing (the index of the runs)"]
    text = index.read_text(encoding="utf-8")
    if "\n## The runs\n" in text:  # the list itself (a later section may map old names to the same folders)
        text = text.split("\n## The runs\n", 1)[1].split("\n## ", 1)[0]
    out = []
    for folder in run_folders(runs):
        if text.count(f"({folder.name}/)") != 1:
            out.append(
                f"docs/gpu-runs/README.md: links {folder.name}/ {text.count(f'({folder.name}/)')} times, not once"
            )
    for p in runs.iterdir():
        if p.is_file() and p.name != "README.md":
            out.append(f"docs/gpu-runs/{p.name}: a file outside a run folder (each run has its folder)")
    return out


def text_files(roots: Iterable[Path]) -> Iterator[Path]:
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix in TEXT_SUFFIXES:
                yield p


def cited_runs(text: str) -> list[tuple[int, str, str, str]]:
    """(offset, GPU, date, commit) of every run a text cites: each "<date> (<commit>)" after a "<GPU> run(s) " in
    the same paragraph (a citation may wrap across lines)."""
    found = []
    for para_start, para in _paragraphs(text):
        named = [(m.start(), m.group(1)) for m in CITATION.finditer(para)]
        for m in DATED.finditer(para):
            before = [gpu for start, gpu in named if start < m.start()]
            if before:
                found.append((para_start + m.start(), before[-1], m.group(1), m.group(2)))
    return found


def _paragraphs(text: str) -> Iterator[tuple[int, str]]:
    start = 0
    for m in re.finditer(r"\n\s*\n", text):
        yield start, text[start : m.start()]
        start = m.end()
    yield start, text[start:]


def citation_problems(roots: Iterable[Path], runs: Path = RUNS) -> list[tuple[Path, int, str]]:
    """Every citation of a run in the text under `roots` that names no recorded run: (file, line, why)."""
    out = []
    for path in text_files(roots):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for offset, gpu, date, commit in cited_runs(text):
            folder = f"{date}-{gpu_slug(gpu)}-{commit}"
            if not (runs / folder).is_dir():
                lineno = text.count("\n", 0, offset) + 1
                out.append((path, lineno, f"'{date} ({commit})' names no run folder docs/gpu-runs/{folder}/"))
        for lineno, line in enumerate(text.splitlines(), 1):
            for m in PATH_REF.finditer(line):
                ref = m.group(1).rstrip(".:")
                if not ref or ref == "README.md":  # "docs/gpu-runs/..." in prose; the index itself
                    continue
                if not FOLDER.match(ref.split("/")[0]):
                    out.append(
                        (path, lineno, f"'gpu-runs/{ref}' is not inside a run folder <date>-<gpu>-<commit>")
                    )
                elif not (any(runs.glob(ref)) if "*" in ref else (runs / ref).exists()):
                    out.append((path, lineno, f"'gpu-runs/{ref}' does not exist"))
    return out


def check(roots: Iterable[Path]) -> list[str]:
    problems = index_problems()
    for folder in run_folders():
        problems += folder_problems(folder)
    for path, lineno, why in citation_problems(roots):
        problems.append(f"{path.relative_to(ROOT)}:{lineno}: {why}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check", help="check docs/gpu-runs and every citation of a run in src/, course/ and docs/")
    name = sub.add_parser("name", help="print the folder name of a run made now")
    name.add_argument("--gpu", default=None, help="the GPU as nvidia-smi names it (default: asks nvidia-smi)")
    name.add_argument("--commit", default=None, help="default: TRITONLAB_COMMIT, else git's HEAD")
    name.add_argument("--date", default=None, help="default: today (UTC)")
    args = parser.parse_args(argv)
    if args.command == "name":
        import datetime as dt

        date = args.date or dt.datetime.now(dt.UTC).date().isoformat()
        gpu = args.gpu if args.gpu is not None else first_gpu()
        if not gpu:
            parser.error("no GPU found by nvidia-smi: name it with --gpu")
        try:
            print(folder_name(date, gpu, args.commit or current_commit()))
        except ValueError as exc:
            parser.error(str(exc))
        return 0
    problems = check([ROOT / "src", ROOT / "course", ROOT / "docs"])
    for p in problems:
        print(p)
    print(f"{len(run_folders())} run folders; {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
