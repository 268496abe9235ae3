"""Learner state on disk: the progress database (attempts, hints, quiz answers) and the workspace of learner
files (atomic saves, conflicts, backups). Only the service opens these for an interface, so who may read which
learner's data is decided in one place.

May import: `tritonlab.config`, `tritonlab.models`. Never imports runs, grading, the service or an interface.
"""
