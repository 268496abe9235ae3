"""`tritonlab` in the terminal: one module per command group (`app` holds the main commands, `quiz`, `bench`,
`serve`, `viz`, `watch`, `doctor`, `devcheck`) over `common` (global options, errors for people, verdicts).
Importing any of them imports neither torch nor triton.

May import: the service, `content`, `viz`, `web` (for `serve`), `config`, `models`, `i18n`. Reaches runs, grading,
perf and store only through the service, with the two exceptions listed in docs/architecture.md.
"""
