"""The course as data: reading and validating `course/` (lessons, exercises, examples) and the quiz banks, and
grading a quiz answer. Pure and cheap: no torch, triton or processes.

Modules:
- `course.py`: load the course folder (course/) and validate it; every `CourseError` names the file and field.
- `quiz_bank.py`: a quiz bank (quiz.<lang>.toml): its data model, loading and validation.
- `quiz.py`: a quiz in use: shuffled options, answers parsed and graded, the score.

May import: `tritonlab.config`, `tritonlab.models`. Never imports the layers above it.
"""
