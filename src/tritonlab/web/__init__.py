"""The browser interface: `tritonlab serve` renders lessons, runs and checks code, and streams the terminal.

Modules:
- `app.py`: `create_app`: the routers, error handlers and the guard around them.
- `security.py`: the `Guard` middleware: token and cookie, Host and Origin checks, body cap, headers.
- `redirects.py`: `same_origin_path`, the only `next` targets a page may send the browser to.
- `pages.py`: the server-rendered pages (index, lesson and workbench, figures, language switch);
  `markdown.py`: lesson Markdown to HTML; `lang.py`: the page's language, per browser.
- `api.py`: what every JSON route shares; the routes: `code_api.py` (the learner's code, hints, progress),
  `runs_api.py` (runs and checks, streamed), `viz_api.py` (Visualize and Inspect), `profile_api.py` (Profile),
  `quiz_api.py` (quizzes).
- `jobs.py`: runs and checks in flight, their ordered events, Stop; `output_spill.py`: their output past
  32 KiB on disk, bounded.
- `connections.py`: what a connection may hold: a cap on open connections (the oldest idle or half-sent one
  closed first), deadlines for a request's head and body.
- `proxy.py`: the client's address and scheme, from forwarded headers only when a trusted proxy sent them.
- `classroom/`: `serve --classroom`: sessions, CSRF, log-in, the teacher's view, the leaderboard.
- `__main__.py`: `python -m tritonlab.web serve`.

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
