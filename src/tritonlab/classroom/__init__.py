"""Teaching a class: accounts (learner | teacher), sessions, the join link, per-learner services over the
classroom database, the teacher's matrix and exports. Interfaces (cli, web) call this package; it sits beside
the service and never imports an interface.

May import: `tritonlab.config`, `tritonlab.models`, `tritonlab.store`, `tritonlab.runs` (the run folder's
location), `tritonlab.service`.
"""
