"""Grading a kernel: the per-exercise contracts (cases, float64 references, judgement), guard regions and
poisoned outputs, the child-side harness that calls the learner's function, and the grader that runs a check
through the sandbox and turns raw outputs into a `Verdict`.

May import: `tritonlab.config`, `tritonlab.models`, `tritonlab.runs`. Never imports viz, perf, store, the service
or an interface.
"""
