"""Speed: the benchmark protocol (timing, GB/s and TFLOP/s), this GPU's measured peaks, the course's
production-tier reference kernels, and timing a learner's kernel in a sandboxed child.

Modules:
- `bench.py`: the timing protocol (`measure_case`, the hidden-launch timer), units, the run's environment,
  text tables.
- `plots.py`: roofline, sweep, heat-map and bar plots of stored results (matplotlib only).
- `peaks.py`: this GPU's measured ceilings (copy bandwidth, dense bf16 matmul rate), cached per GPU.
- `targets.py`: the reference kernels' targets, judged from bench rows (`targets.toml`: measured causes).
- `kernels/`: the reference kernels, their benchmark cases and sweeps, their CPU lowering and self-check.
- `bench_learner.py`: `tritonlab bench EXERCISE`: a learner's kernel timed in a sandboxed child.
- `speed.py`: the speed of a passing GPU check: one recorded call, replayed and timed by a trusted child.

May import: `tritonlab.config`, `tritonlab.models`, `tritonlab.runs`, `tritonlab.grading`. Never imports store, the
service or an interface.
"""
