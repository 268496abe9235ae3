"""Speed: the benchmark protocol (timing, GB/s and TFLOP/s), this GPU's measured peaks, the course's
production-tier reference kernels, and timing a learner's kernel in a sandboxed child.

May import: `tritonlab.config`, `tritonlab.models`, `tritonlab.runs`, `tritonlab.grading`. Never imports store, the
service or an interface.
"""
