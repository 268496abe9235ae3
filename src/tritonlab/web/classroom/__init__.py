"""`serve --classroom`: accounts instead of the one token, per-learner state, the teacher's view.

`install` turns the app `create_app` is building into the classroom server; `routers` are its routes.

Modules:
- `guard.py`: `ClassroomGuard`, the middleware: sessions, CSRF and Origin, teachers-only paths.
- `ownership.py`: runs and quiz attempts remember who started them; one run per learner, a rate limit.
- `login.py`: log in, log out, join with the class's link, and their pages.
- `oidc.py`: `/auth/`: log-in through the class's OpenID provider (code flow + PKCE), and logout.
- `ratelimit.py`: `PerKey`, a sliding-window rate limit per client address (joins).
- `teacher.py`: the teacher's pages and `/api/classroom/` (matrix, CSV, roster, join link), a picture's cell
  drilled down to its learners and their code.
- `pictures.py`: the teacher's pictures as inline SVG (the numbers: classroom/insights.py).
- `exports.py`: the pictures' numbers as JSON and CSV, and as PNG drawn by matplotlib (bounded, rate-limited).
- `leaderboard.py`: the opt-in speed leaderboard's page and API.

May import what web/ may. Imported only when `serve --classroom` builds its app.
"""

from __future__ import annotations

from fastapi import APIRouter

from tritonlab.classroom.room import Classroom
from tritonlab.service import Service
from tritonlab.web.classroom import exports, leaderboard, login, oidc, teacher
from tritonlab.web.classroom.guard import ClassroomGuard
from tritonlab.web.classroom.ownership import OwnedAttempts, OwnedJobs

routers: tuple[APIRouter, ...] = (
    login.router,
    oidc.router,
    teacher.router,
    exports.router,
    leaderboard.router,
)


def install(app, classroom: Classroom, service: Service, allowed_hosts, public_url: str | None) -> None:  # type: ignore[no-untyped-def]
    """Turn the app `create_app` is building into the classroom server."""
    app.state.classroom = classroom
    service.private_workspaces()  # the sandbox shows a run only its own learner's file (docs/classroom.md)
    app.state.jobs = OwnedJobs()
    app.state.quiz_attempts = OwnedAttempts()
    oidc.install(app, classroom)  # the class's OpenID provider, if it has one (app.state.sso)
    app.state.join_limit = login.join_limit()
    app.add_middleware(
        ClassroomGuard,
        classroom=classroom,
        service=service,
        allowed_hosts=allowed_hosts,
        lang=service.lang,
        public_url=public_url,
    )
