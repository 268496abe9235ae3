"""`tritonlab profile`: a learner's kernel timed under Proton (`triton.profiler`) on a GPU, in the sandbox.

Modules:
- `child.py`: the child side (job mode `profile`, named in runs/zygote.py ENTRIES): it imports the learner's
  file, runs its function on the exercise's benchmark inputs under Proton and writes `profile.json`.
- `report.py`: the parent side: the job, the validation of that hostile file, the rates against this GPU's
  measured roofs (perf/peaks), the static view from `inspect` when there is no GPU, and the text report.

May import config, models, runs, grading and perf (docs/architecture.md).
"""
