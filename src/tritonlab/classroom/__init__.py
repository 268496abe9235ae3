"""Teaching a class: accounts (learner | teacher), sessions, the join link, per-learner services over the
classroom database, the teacher's matrix and exports. Interfaces (cli, web) call this package; it sits beside
the service and never imports an interface.

Modules:
- `auth.py`: the Authenticator seam, argon2id passwords, generated passwords, the log-in back-off.
- `room.py`: `Classroom` (accounts, join link, the teacher's matrix and CSV) and `LearnerService` (the
  service bound to one learner's store and code).
- `backup.py`: what `classroom backup` / `restore` call (the database's URL, the file, the refusals).

May import: `tritonlab.config`, `tritonlab.models`, `tritonlab.store`, `tritonlab.runs` (the run folder's
location), `tritonlab.service`.
"""
