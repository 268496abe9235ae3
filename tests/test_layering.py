"""One dependency direction: course/ never imports tritonlab; the engine never imports the interfaces;
the CLI process never imports torch or triton at start-up."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "tritonlab"
# Interface modules (and the helpers only they use): everything named cli*, plus these.
INTERFACE_HELPERS = {"watch", "web", "quiz_terminal", "doctor", "devcheck", "__main__"}


def is_interface(name: str) -> bool:
    return name.startswith("cli") or name in INTERFACE_HELPERS


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_course_never_imports_tritonlab() -> None:
    offenders = [
        p
        for p in (ROOT / "course").rglob("*.py")
        if any(m.split(".")[0] == "tritonlab" for m in imported_modules(p))
    ]
    assert not offenders


def test_engine_does_not_import_interfaces() -> None:
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).parts
        if is_interface(rel[0].removesuffix(".py")):
            continue
        for module in imported_modules(path):
            parts = module.split(".")
            if parts[0] == "tritonlab" and len(parts) > 1:
                assert not is_interface(parts[1]), f"{path} imports the interface module {module}"


def test_cli_start_up_does_not_import_torch_or_triton() -> None:
    code = "import sys, tritonlab.cli; print(sorted(m for m in ('torch', 'triton') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
