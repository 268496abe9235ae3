"""The course as data: reading and validating `course/` (lessons, exercises, examples) and the quiz banks, and
grading a quiz answer. Pure and cheap: no torch, triton or processes.

May import: `tritonlab.config`, `tritonlab.models`. Never imports the layers above it.
"""
