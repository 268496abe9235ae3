"""Learner state on disk: a single learner's progress database and workspace of files, and the classroom
database (every learner's progress and code, the class's accounts and sessions). Only the service and
`classroom/` open these for an interface, so who may read which learner's data is decided in one place.

Modules:
- `progress.py`: the single-user progress database (SQLite, WAL, synchronous=FULL; versioned migrations):
  attempts, hints, quiz answers, state.
- `workspace.py`: the learner's files: copies of starters, atomic saves, conflicts, backups, no symlink
  following.
- `disk.py`: `DiskFull` (ENOSPC, SQLite's "full"), answered 507 by the web app.
- `classroom.py`: `ClassroomDB`, the classroom database as one object (SQLAlchemy Core, SQLite or PostgreSQL),
  made of `database.py` (the engine, its durability settings, the migrations), `accounts.py` (the class, the
  settings, the users) and `sessions.py` (log-in sessions, back-off counters); bound to one learner,
  `learner_progress.py` (attempts, hints, quiz answers, state) and `learner_code.py` (their code).
- `leaderboard.py`: the classroom's opt-in speed leaderboard.
- `identities.py`: roster e-mails, OpenID provider accounts linked to users, provider log-ins in flight.
- `code_backups.py`: the bounds on copies of a learner's code (size, rate, count, bytes).
- `backup.py`, `restore.py`: the classroom database as one file and back (a consistent snapshot, an
  all-or-nothing restore).
- `schema.py`: the classroom database's tables; `migrations/`: the Alembic revisions that create and change them.

May import: `tritonlab.config`, `tritonlab.models`. Never imports runs, grading, the service or an interface.
"""
