"""docs/contributing.md is followed, not just read: its exercise walk, done in a copy of the repository, gives an
exercise that `tritonlab dev check`, the promise test and the right/wrong learner-file tests accept.

The doc's code blocks carry what to do with them in their info string: `file=PATH` (write the block as PATH),
`replace-line=PATH` (each `key = ...` line replaces PATH's line with that key), `append=PATH`, and `after="TEXT"
file=PATH` (insert the block after PATH's line holding TEXT). The `console` block of step 7 is run as written,
in the copy, with `TRITONLAB_COURSE` and `PYTHONPATH` pointing at the copy's course and src."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "contributing.md"
FENCE = re.compile(r"^```(\S+)([^\n]*)\n(.*?)^```$", re.M | re.S)


def blocks(section: str) -> list[tuple[str, dict[str, str], str]]:
    """(language, actions, body) of each fenced block of one `## ` section of the doc."""
    text = DOC.read_text(encoding="utf-8")
    part = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    out = []
    for m in FENCE.finditer(part):
        actions = {}
        for word in shlex.split(m.group(2)):
            key, _, value = word.partition("=")
            actions[key] = value
        out.append((m.group(1), actions, m.group(3)))
    return out


def apply(block: tuple[str, dict[str, str], str], repo: Path) -> Path | None:
    """Do what a block of the doc says to its file in `repo`; the file it touched (None: nothing to do)."""
    _, actions, body = block
    if "file" in actions and "after" in actions:
        path = repo / actions["file"]
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        (at,) = [i for i, line in enumerate(lines) if actions["after"] in line]
        path.write_text("".join(lines[: at + 1]) + body + "".join(lines[at + 1 :]), encoding="utf-8")
    elif "file" in actions:
        path = repo / actions["file"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    elif "replace-line" in actions:
        path = repo / actions["replace-line"]
        text = path.read_text(encoding="utf-8")
        for line in body.splitlines():
            key = line.split("=", 1)[0].strip()
            text, count = re.subn(rf"^{re.escape(key)} =.*$", line, text, count=1, flags=re.M)
            assert count == 1, f"{path}: no '{key} =' line to replace"
        path.write_text(text, encoding="utf-8")
    elif "append" in actions:
        path = repo / actions["append"]
        path.write_text(path.read_text(encoding="utf-8") + body, encoding="utf-8")
    else:
        return None
    return path


def test_the_doc_is_linked_where_a_contributor_starts() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    more = readme.split("\n## More\n", 1)[1].split("\n## ", 1)[0]
    assert "`docs/contributing.md`" in more
    arch = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "`docs/contributing.md`" in arch.split("## Where do I add", 1)[1].split("\n## ", 1)[0]


def test_the_doc_names_where_each_block_goes() -> None:
    """Every code block of the exercise walk but the commands says which file it writes or changes, inside the
    repository, and the commands run the exercise's own checks."""
    walk = blocks("Adding an exercise, end to end")
    assert len(walk) >= 10
    for lang, actions, _ in walk:
        if lang == "console":
            continue
        target = actions.get("file") or actions.get("replace-line") or actions.get("append")
        assert target and not target.startswith(("/", "..")), (lang, actions)
    (commands,) = [body for lang, _, body in walk if lang == "console"]
    assert "dev check --only vector-scale" in commands and "test_wrong_solutions.py" in commands
    assert "test_promises.py" in commands and "vector-scale or vector_scale" in commands


@pytest.mark.slow
def test_following_the_exercise_walk_gives_an_exercise_dev_check_accepts(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for folder in ("src", "course", "scripts", "tests", "docs"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    walk = blocks("Adding an exercise, end to end")
    touched = [apply(block, repo) for block in walk]
    assert (repo / "src/tritonlab/grading/contracts/vector_scale.py") in touched
    assert (repo / "course/05-vector-add/exercises/vector-scale/exercise.toml").is_file()

    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITONLAB_")}
    env |= {
        "PYTHONPATH": str(repo / "src"),
        "TRITONLAB_COURSE": str(repo / "course"),
        "TRITONLAB_HOME": str(tmp_path / "home"),
        "TRITONLAB_DAEMON": "0",
        "TRITON_INTERPRET": "1",
    }
    venv_bin = Path(sys.executable).parent
    (commands,) = [body for lang, _, body in walk if lang == "console"]
    for line in filter(None, (c.strip() for c in commands.replace("\\\n", " ").splitlines())):
        argv = shlex.split(line)
        argv[0] = str(venv_bin / Path(argv[0]).name)  # the doc's `.venv/bin/X`: this interpreter's X
        if "dev" in argv and "check" in argv:
            argv.append("--json")
        done = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        if "dev" in argv and "check" in argv:  # the exercise was found and checked: no vacuous pass
            report = json.loads(done.stdout)
            assert {i["item"]: i["ok"] for i in report["items"]} == {
                "vector-scale solution": True,
                "vector-scale starter": True,
            }, report
        if "pytest" in argv:  # the new files were collected and passed, none skipped
            counts = re.search(r"(\d+) passed", done.stdout)
            assert counts and int(counts.group(1)) >= 4 and "skipped" not in done.stdout.splitlines()[-1], (
                done.stdout
            )
    assert "`vector-scale`" in (repo / "docs" / "outcomes.md").read_text(encoding="utf-8")
