"""Generate docs/cli.md from the CLI's own --help (so the docs can't drift). --check exits 1 when stale."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "cli.md"


def commands() -> list[list[str]]:
    sys.path.insert(0, str(ROOT / "src"))
    from tritonlab.cli.app import app

    found = [[]]
    for info in app.registered_commands:
        found.append([info.name or info.callback.__name__.replace("_", "-")])
    for group in app.registered_groups:
        sub = group.typer_instance
        for info in sub.registered_commands:
            found.append([group.name, info.name or info.callback.__name__])
    return found


def help_text(args: list[str]) -> str:
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1", TERM="dumb", _TYPER_FORCE_DISABLE_TERMINAL="1")
    out = subprocess.run(
        [sys.executable, "-m", "tritonlab", *args, "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return out.stdout.rstrip()


def render() -> str:
    parts = [
        "# Command-line reference",
        "",
        "Generated from `--help` by `python scripts/gen_cli_docs.py`; a test fails when it is stale.",
        "",
    ]
    for args in commands():
        title = " ".join(["tritonlab", *args])
        parts += [f"## `{title}`", "", "```text", help_text(args), "```", ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when docs/cli.md is stale"
    )
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        return 0 if OUT.is_file() and OUT.read_text() == text else 1
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
