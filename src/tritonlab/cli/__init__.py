"""`tritonlab` in the terminal: one module per command group over `common.py`. Importing any of them imports
neither torch nor triton.

Modules:
- `app.py`: the `tritonlab` app: global options, the order of the commands, `doctor`, `dev check` and
  `daemon status|stop` (handing over to their modules), `main`.
- `common.py`: what every command shares: options, messages in the learner's language, errors for people,
  making the service, printing a verdict.
- `course.py`: `list`, `show`, `init`, `hint`, `reset`, `progress`.
- `check.py`: `run`, `check` (through the check daemon by default), `watch`; `watch.py`: its loop and keys.
- `daemon.py`: the check daemon's client (standard library only); `daemon_server.py`: the daemon itself.
- `quiz.py`: `quiz`; `quiz_terminal.py`: the interactive quiz on a terminal.
- `bench.py`: `bench`; `inspect.py`: `inspect`; `profile.py`: `profile`; `viz.py`: `viz`.
- `serve.py`: `serve` and `notebook`; `serve_banner.py`: the URLs `serve --classroom` prints.
- `classroom.py`: `classroom …`; `classroom_backup.py`: `classroom backup`, `classroom restore`.
- `doctor.py`: what `doctor` checks and prints; `devcheck.py`: what `dev check` proves, several files at once.

May import: the service, `classroom`, `content`, `viz`, `web` (for `serve`), `config`, `models`, `i18n`.
Reaches runs, grading, perf and store only through the service, with the two exceptions listed in
docs/architecture.md.
"""
