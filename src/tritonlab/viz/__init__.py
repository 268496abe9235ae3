"""See the kernel: record which elements each program of a learner's launch touched, and draw it.

- `recorder` (CHILD side, imports triton): hooks on Triton's interpreter that log, per launch and per program
  id, every load and store — element offsets per tensor, masked lanes, out-of-bounds lanes.
- `child` (CHILD side): the harness's "viz" mode — build a case's guarded inputs, call the learner, save the log.
- `run` (PARENT side): pick a small representative case, run it in the sandbox, draw the picture.
- `logview`, `pictures`, `tiles`, `roofline` (PARENT side, numpy + matplotlib only): read the log, draw.

The access log is plain JSON; see `recorder.AccessLog.to_json` for its shape.
"""
