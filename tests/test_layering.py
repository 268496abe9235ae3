"""One dependency direction, no import cycles: the layout of docs/architecture.md, held by reading imports with
`ast` (every import counts, at module level or inside a function).

    config, models  →  content, runs, store  →  grading  →  viz, perf  →  service  →  cli, web

course/ never imports tritonlab; the CLI's start-up never imports torch or triton. Packages are sized by concern:
each package's `__init__` lists its modules, and no module is over 450 lines (issue 32)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "tritonlab"

# Each top-level piece of the package and the pieces it may import (itself always allowed).
ALLOWED: dict[str, set[str]] = {
    # the package face: `%load_ext tritonlab` and `tritonlab.check` hand over to notebook/, lazily
    "__init__": {"notebook"},
    "config": set(),
    "models": set(),
    "i18n": {"config"},
    "content": {"config", "models"},
    "runs": {"config"},
    "store": {"config", "models"},
    "grading": {"config", "models", "runs", "i18n"},  # i18n: the grader's messages are catalog templates
    "viz": {"config", "models", "runs", "grading"},
    "perf": {"config", "models", "runs", "grading"},
    "profiling": {"config", "models", "runs", "grading", "perf"},
    "service": {"config", "models", "content", "runs", "store", "grading", "viz", "perf", "profiling"},
    "classroom": {"config", "models", "runs", "store", "service"},
    "cli": {"config", "models", "i18n", "content", "viz", "service", "classroom", "web", "notebook"},
    "web": {"config", "models", "i18n", "content", "viz", "service", "classroom", "cli"},
    "notebook": {"config", "models", "i18n", "content", "viz", "service"},
    "__main__": {"cli"},
}
# The narrow exceptions docs/architecture.md lists, with why: (importing module, imported piece).
EXCEPTIONS = {
    # doctor reports on the sandbox layers themselves: it runs their probes and prints what they found.
    ("cli/doctor.py", "runs"),
    # `tritonlab bench --all` times the course's own reference kernels (trusted code, no learner data, no
    # storage); a learner's kernel is timed through Service.run_job like every other run.
    ("cli/bench.py", "perf"),
    # `%bench` in a notebook reuses perf.bench_learner.run, which times the learner's kernel in the sandbox
    # through Service.run_job, exactly like `tritonlab bench EXERCISE`.
    ("notebook/bench.py", "perf"),
}
INTERFACES = {"cli", "web", "notebook", "__main__"}


def piece_of(path: Path) -> str:
    return path.relative_to(SRC).parts[0].removesuffix(".py")


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> set[str]:
    """Every tritonlab module a file imports, resolved to a module (not an attribute) where one exists."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return {n for n in names if n.split(".")[0] == "tritonlab" and n in ALL_MODULES}


ALL_MODULES = {module_name(p) for p in SRC.rglob("*.py")} | {"tritonlab"}


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for path in SRC.rglob("*.py"):
        me = module_name(path)
        # importing a.b.c also imports its packages; a package's own __init__ is not an edge back to it
        graph[me] = {
            m for m in imported_modules(path) if m != me and not me.startswith(m + ".") and m != "tritonlab"
        }
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle in `graph` as a list of nodes, or None (iterative depth-first search)."""
    state: dict[str, int] = {}
    for start in sorted(graph):
        if state.get(start):
            continue
        stack = [(start, iter(sorted(graph.get(start, ()))))]
        path = [start]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if state.get(child) == 1:
                    return path[path.index(child) :] + [child]
                if not state.get(child):
                    state[child] = 1
                    path.append(child)
                    stack.append((child, iter(sorted(graph.get(child, ())))))
                    break
            else:
                state[node] = 2
                path.pop()
                stack.pop()
    return None


def layer_violations() -> list[str]:
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        mine = piece_of(path)
        rel = str(path.relative_to(SRC))
        assert mine in ALLOWED, (
            f"{rel}: new top-level piece {mine!r}: add it to ALLOWED and docs/architecture.md"
        )
        for module in imported_modules(path):
            parts = module.split(".")
            if len(parts) < 2:
                continue
            theirs = parts[1]
            if theirs == mine or theirs in ALLOWED[mine] or (rel, theirs) in EXCEPTIONS:
                continue
            problems.append(f"{rel} imports {module} ({mine} may not import {theirs})")
    return problems


def test_no_import_cycles() -> None:
    assert find_cycle(import_graph()) is None, (
        f"import cycle: {' -> '.join(find_cycle(import_graph()) or [])}"
    )


def test_every_import_points_down() -> None:
    assert layer_violations() == []


def test_top_level_stays_small() -> None:
    modules = sorted(p.name for p in SRC.glob("*.py"))
    assert len(modules) <= 8, modules
    for package in (p for p in SRC.iterdir() if (p / "__init__.py").exists()):
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc) > 80, (
            f"{package.name}/__init__.py needs a docstring: what it owns and may import"
        )


def test_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize(
    ("piece", "line"),
    [
        ("runs/sandbox.py", "from tritonlab.grading.check import pipeline\n"),  # the sandbox reaching up
        ("grading/guards.py", "from tritonlab.service import Service\n"),  # the engine importing the service
        ("web/api.py", "from tritonlab.store.progress import Store\n"),  # an interface past the service
        ("content/course.py", "from tritonlab.cli import app\n"),  # data loading importing an interface
    ],
)
def test_an_upward_import_is_caught(piece: str, line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules above are not vacuous: planting one upward import makes them fail."""
    path = SRC / piece
    original = Path.read_text

    def planted(self: Path, *args, **kwargs) -> str:  # noqa: ANN002, ANN003
        text = original(self, *args, **kwargs)
        return text + "\n" + line if self == path else text

    monkeypatch.setattr(Path, "read_text", planted)
    assert any(v.startswith(piece) for v in layer_violations())


def test_a_planted_cycle_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    path = SRC / "grading" / "patterns.py"
    original = Path.read_text

    def planted(self: Path, *args, **kwargs) -> str:  # noqa: ANN002, ANN003
        text = original(self, *args, **kwargs)
        return text + "\nfrom tritonlab.grading import guards\n" if self == path else text

    monkeypatch.setattr(Path, "read_text", planted)
    assert find_cycle(import_graph()) is not None


def test_course_never_imports_tritonlab() -> None:
    offenders = []
    for p in (ROOT / "course").rglob("*.py"):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n.split(".")[0] == "tritonlab" for n in names):
                offenders.append(p)
    assert not offenders


def test_cli_start_up_does_not_import_torch_or_triton() -> None:
    """Nor ray: the cluster executor (`--executor ray`) imports it only when chosen."""
    code = (
        "import sys, tritonlab.cli.app, tritonlab.web, tritonlab.service; "
        "print(sorted(m for m in ('torch', 'triton', 'ray') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---- packages sized by concern, not by a number ----------------------------------------------------------------
# A package's modules share one concern, and its `__init__` docstring says what each one holds: a section that
# starts with the line `Modules:` and runs to the first blank line, naming every module as `name.py` and every
# subpackage as `name/`. A newcomer reads it to find the room for a change; the test keeps it complete and true.

MODULE_ENTRY = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*(?:\.py|/))`")
# Packages of one module per item, named by a rule their `__init__` states instead of a list.
LISTED_BY_RULE = {
    "grading/contracts": "one module per exercise id (vector-copy -> vector_copy.py)",
    "perf/kernels": "one module per reference kernel, named like the kernel",
    "store/migrations/versions": "one module per schema revision, applied in order by Alembic",
}
# Packages whose `__init__` has no module list yet: each is being split by its own change (issue 32), which writes
# the list; remove the entry when that split lands (test_the_exemptions_are_still_true then insists).
LIST_STILL_TO_WRITE: set[str] = set()


def packages() -> dict[str, Path]:
    """Every package under src/tritonlab by its path (`store`, `web/classroom`), the top level as `tritonlab`."""
    found = {"tritonlab": SRC}
    for init in SRC.rglob("__init__.py"):
        if init.parent != SRC:
            found[init.parent.relative_to(SRC).as_posix()] = init.parent
    return found


def package_doc(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""


def listed_modules(doc: str) -> set[str] | None:
    """The modules a package docstring's `Modules:` section names, or None when it has no such section."""
    lines = doc.splitlines()
    if "Modules:" not in lines:
        return None
    section = []
    for line in lines[lines.index("Modules:") + 1 :]:
        if not line.strip():
            break
        section.append(line)
    return set(MODULE_ENTRY.findall("\n".join(section)))


def module_list_problems(package: Path, name: str) -> list[str]:
    """What is wrong with a package's module list: a module it leaves out, or one it names that is not there."""
    listed = listed_modules(package_doc(package))
    if listed is None:
        return [f"{name}/__init__.py: its docstring has no `Modules:` section listing its modules"]
    present = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    present |= {p.name + "/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    missing = [f"{name}/__init__.py does not list {m}" for m in sorted(present - listed)]
    stale = [f"{name}/__init__.py lists {m}, which does not exist" for m in sorted(listed - present)]
    return missing + stale


def test_each_package_lists_its_modules() -> None:
    problems = []
    for name, package in sorted(packages().items()):
        if name not in LISTED_BY_RULE and name not in LIST_STILL_TO_WRITE:
            problems += module_list_problems(package, name)
    assert problems == [], "\n".join(problems)


def test_the_exemptions_are_still_true() -> None:
    found = packages()
    for name in [*LISTED_BY_RULE, *LIST_STILL_TO_WRITE]:
        assert name in found, f"{name} is no package any more: remove it from the exemptions"
    for name in LISTED_BY_RULE:
        assert len(package_doc(found[name])) > 80, f"{name}/__init__.py must state how its modules are named"
    for name in LIST_STILL_TO_WRITE:
        assert listed_modules(package_doc(found[name])) is None, (
            f"{name}/__init__.py lists its modules now: remove it from LIST_STILL_TO_WRITE"
        )


def test_a_missing_or_stale_module_list_is_caught(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "__init__.py").write_text("")
    for name in ("a.py", "b.py"):
        (package / name).write_text("")
    (package / "__init__.py").write_text(
        '"""A package.\n\nModules:\n- `a.py`: one.\n- `gone.py`: moved.\n"""\n'
    )
    assert module_list_problems(package, "pkg") == [
        "pkg/__init__.py does not list b.py",
        "pkg/__init__.py does not list sub/",
        "pkg/__init__.py lists gone.py, which does not exist",
    ]
    (package / "__init__.py").write_text('"""A package: no list."""\n')
    assert module_list_problems(package, "pkg") == [
        "pkg/__init__.py: its docstring has no `Modules:` section listing its modules"
    ]


MAX_LINES = 450  # a module past ~400 lines is split by concern; this is the hard limit (issue 32)
# Generated or vendored modules, which may be longer, each with the reason: none today.
LONG_BY_NATURE: dict[str, str] = {}
# Modules over the limit that are being split by their own changes (issue 32: grading, the service, runs, perf).
# Each entry is removed when its split lands (test_still_to_split_is_true fails once the module is short enough).
STILL_TO_SPLIT: dict[str, int] = {}


def line_counts() -> dict[str, int]:
    return {
        p.relative_to(SRC).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in SRC.rglob("*.py")
    }


def long_modules() -> dict[str, int]:
    return {
        rel: n
        for rel, n in sorted(line_counts().items())
        if n > MAX_LINES and rel not in LONG_BY_NATURE and rel not in STILL_TO_SPLIT
    }


def test_no_module_is_over_450_lines() -> None:
    assert long_modules() == {}, "split these by concern (docs/architecture.md, 'Where do I add')"


def test_still_to_split_is_true() -> None:
    counts = line_counts()
    landed = sorted(rel for rel in STILL_TO_SPLIT if counts.get(rel, 0) <= MAX_LINES)
    assert landed == [], f"split (or gone): remove these from STILL_TO_SPLIT: {landed}"


def test_a_long_module_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    path = SRC / "cli" / "app.py"
    original = Path.read_text

    def longer(self: Path, *args, **kwargs) -> str:  # noqa: ANN002, ANN003
        text = original(self, *args, **kwargs)
        return text + "\n" * MAX_LINES if self == path else text

    monkeypatch.setattr(Path, "read_text", longer)
    assert list(long_modules()) == ["cli/app.py"]


# The check daemon's client is what a one-shot `tritonlab check` imports: the standard library and
# `tritonlab.config` only, so the command loads no torch, triton or NumPy (tests/test_daemon.py measures it).
DAEMON_CLIENT = SRC / "cli" / "daemon.py"


def outside_the_standard_library(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names.add(node.module or "")
        elif isinstance(node, ast.ImportFrom):
            names.add("relative import")
    return {n for n in names if n.split(".")[0] not in sys.stdlib_module_names and n != "tritonlab"} - {
        "tritonlab.config"
    }


def test_the_daemon_client_imports_only_the_standard_library() -> None:
    assert outside_the_standard_library(DAEMON_CLIENT) == set()


def test_a_heavy_import_in_the_daemon_client_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    original = Path.read_text

    def planted(self: Path, *args, **kwargs) -> str:  # noqa: ANN002, ANN003
        text = original(self, *args, **kwargs)
        return text + "\nfrom tritonlab.service import Service\n" if self == DAEMON_CLIENT else text

    monkeypatch.setattr(Path, "read_text", planted)
    assert outside_the_standard_library(DAEMON_CLIENT) == {"tritonlab.service"}


def test_the_zygotes_named_entry_points_exist() -> None:
    """The sandbox names the child-side code it runs instead of importing it (docs/architecture.md, "How the
    sandbox stays below what it runs"): every job mode's `module:function`, every warmed module and the preload
    must still exist after code moves, in a fresh interpreter as the zygote would import them."""
    code = (
        "import importlib\n"
        "from tritonlab.runs import zygote\n"
        "for target in [*zygote.ENTRIES.values(), zygote.PRELOAD, *zygote.WARM]:\n"
        "    module, _, function = target.partition(':')\n"
        "    found = importlib.import_module(module)\n"
        "    assert not function or callable(getattr(found, function, None)), target\n"
    )
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
