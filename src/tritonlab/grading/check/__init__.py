"""The parent side of a check: the pipeline that turns a learner's file into a `Verdict`, one module per step.

`pipeline.CheckRun` is the check, end to end (cases → job → run → read → judge → replay, then the caller's
record → show → speed); each step is a function in the module named after it. The child side of the check
is `grading/harness.py`, of the replay `grading/replay/`. Nothing here imports torch or triton: the parent
never runs learner code.

Modules:
- `pipeline.py`: `CheckRun`, the steps in order; `check()`, the grading alone (no queue, no store).
- `cases.py`: step 1, the contract's cases for a seed (cached), their references made ahead.
- `job.py`: step 2, the run directory: the snapshot of the graded text, the inputs as `.npy`, `job.json`.
- `run.py`: step 3, the check child under the run's limits; what children say their cases took.
- `read.py`: step 4, the child's result, output arrays and launch records read as hostile data.
- `judge.py`: step 5, every case judged in the parent (`judge_all`), beside the replay (`EarlyJudge`).
- `replay.py`: step 6, the launches alone in a fresh child, compared with what the function returned.
- `host.py`: the exercise's `[host]` policy: which copies of the arguments the host code may make.
- `failures.py`: how a run ended without a result, a refused result, which line to look at.
- `trusted_compile.py`: `TrustedCompile`, the compile that never imports the learner's file.
- `precompile.py`: beside step 3 on a GPU, the replay's kernels compiled ahead into the replay's cache
  (`Precompile`) from the variants the learner's previous replay launched (`VariantStore`).

May import what grading may (config, models, runs); never store/ or perf/ (the service adds those steps).
"""
