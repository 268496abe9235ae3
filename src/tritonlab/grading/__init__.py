"""Grading a kernel: the check pipeline that turns a learner's file into a `Verdict` in the parent, the child-side
code that runs the learner's function (guarded inputs, poisoned outputs, launches and torch ops recorded), the
fresh replay that redoes the recorded launches without the learner's module, and the compile that reads what
the compiler made of a kernel. Nothing a child reports about itself decides a pass: the parent judges.

Modules:
- `check/`: the parent side of a check, one module per step (`check/pipeline.py`: `CheckRun`).
- `retry.py`: parent side: a check whose harness (not the learner's code) died under it is graded again, once.
- `contracts/`: one module per exercise (cases, float64 reference, judgement) and the judgement they share.
- `harness.py`: child side of `check` and `run`: import the learner's file, build inputs, call, write outputs.
- `guards.py`: child side: guard regions and poisoned outputs; the `Recorder` the watchers below fill.
- `launches.py`: child side: every kernel launch counted; the launch record the replay redoes.
- `torch_ops.py`: child side: the aten ops the learner's host code ran, and on which line.
- `replay/`: child side of the fresh replay: kernels rebuilt from the file's text, the record replayed.
- `huge.py`: the ≥ 2³¹-element cases: inputs generated on the device, judged in the replay child.
- `where.py`: which learner line did it (stray loads and stores, the grid expression, the host line).
- `kernel_inspect.py`: what the compiler decided, parsed (targets, ptxas, layouts, occupancy); parent and child.
- `kernel_compile.py`: child side of `inspect` and of the trusted compile: compile for a GPU without one.
- `triton_api.py`: the adapter both compiles go through (the one private Triton call is named there).
- `interp.py`: the interpreter's per-call patching without its listing, in both children.
- `preload.py`: what every child would compute for itself, done once in the zygote before it forks.
- `patterns.py`: the bit patterns of guards and poison, shared by child and parent.
- `case_cache.py`: parent side: a check's cases kept per (exercise, backend, seed), made ahead.

May import: `tritonlab.config`, `tritonlab.models`, `tritonlab.runs`. Never imports viz, perf, store, the service
or an interface.
"""
