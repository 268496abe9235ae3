"""The browser interface: `tritonlab serve` renders lessons, runs and checks code, and streams the terminal.

Importing this package is cheap (the CLI imports `tritonlab.cli.serve` on every command); FastAPI and the
engine load only when `create_app` is first used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from tritonlab.web.app import create_app

        return create_app
    raise AttributeError(f"module 'tritonlab.web' has no attribute {name!r}")
