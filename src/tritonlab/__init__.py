"""tritonlab: a practical course in Triton GPU programming.

Importing this package is cheap: torch and triton are imported only by the modules that run kernels
(the child-side harness, the benchmark and the reference kernels), never by the CLI at start-up.
The map of the code, and which package may import which: docs/architecture.md.

Modules:
- `config.py`: paths and environment overrides; `models.py`: the dataclasses every layer shares;
  `i18n.py`: the CLI's and web page's strings (their catalogs: locales/*.toml).
- `content/`: the course as data; `runs/`: where learner code runs (the sandbox); `store/`: learner state
  on disk; `grading/`: contracts, the grader and its child side; `viz/`: pictures of a launch;
  `perf/`: benchmarks and reference kernels; `profiling/`: `tritonlab profile` (Proton, in the sandbox).
- `service/`: the one surface the interfaces call; `classroom/`: teaching a class over it.
- `cli/`, `web/`, `notebook/`: the interfaces; `__main__.py`: `python -m tritonlab`.
"""

__version__ = "0.1.0"


def load_ipython_extension(ipython):  # noqa: ANN001, ANN201 - IPython's hook; IPython is imported lazily
    """`%load_ext tritonlab` in Jupyter or Colab: registers %%check, %hint, %viz and %bench."""
    from tritonlab.notebook import load_ipython_extension as load

    load(ipython)


def check(exercise_id, source_or_path, *, seed=None):  # noqa: ANN001, ANN201 - kept import-free
    """Check code (a file path, or the source as text) for an exercise in the sandbox; returns the Verdict."""
    from tritonlab.notebook import check as notebook_check

    return notebook_check(exercise_id, source_or_path, seed=seed)
