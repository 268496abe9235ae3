"""Teaching a class: accounts (learner | teacher), sessions, the join link, per-learner services over the
classroom database, the teacher's matrix and exports. Interfaces (cli, web) call this package; it sits beside
the service and never imports an interface.

Modules:
- `auth.py`: the Authenticator seam, argon2id passwords, generated passwords, the log-in back-off.
- `oidc.py`: single sign-on's settings (options, variables, a TOML file), `Identity`, `SSOError`.
- `oidc_client.py`: the OpenID provider's client (Authlib): discovery, keys, code flow with PKCE, the ID token's
  checks, the end-session URL.
- `sso.py`: `SSOLogin`, the two halves of a provider log-in (start, finish) and the log-ins in flight.
- `hash_pool.py`: `HashPool`, where the server's log-ins and joins wait for a hash: bounded, fair per address.
- `room.py`: `Classroom` (accounts, join link, the teacher's matrix and CSV) and `LearnerService` (the
  service bound to one learner's store and code).
- `insights.py`: the numbers of the teacher's pictures (who is stuck on which failure kind, time to a first
  pass, failed checks before it, GPU speeds against the roof) and the learners behind a picture's cell.
- `backup.py`: what `classroom backup` / `restore` call (the database's URL, the file, the refusals).

May import: `tritonlab.config`, `tritonlab.models`, `tritonlab.store`, `tritonlab.runs` (the run folder's
location), `tritonlab.service`.
"""
